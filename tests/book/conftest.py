"""Fixtures the browser tests of the built site share (``browser_pages.py``): the site served
on 127.0.0.1, one headless Chromium, and each page loaded once per screen for every check."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import browser_pages  # noqa: E402
from browser_pages import driver, site_url  # noqa: E402, F401  -- fixtures, found by pytest


@pytest.fixture(scope="session")
def shared_pages(driver, site_url):  # noqa: F811
    return browser_pages.SharedPages(driver, site_url)


def pytest_collection_finish(session):
    browser_pages.select(session.items)


def pytest_terminal_summary(terminalreporter):
    if browser_pages.LOADS[0]:
        terminalreporter.write_line(
            f"tests/book: {browser_pages.LOADS[0]} page loads of the built site"
        )
