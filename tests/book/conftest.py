"""Fixtures the browser tests of the built site share: the site served on 127.0.0.1
(``site_url``, defined once in ``test_site.py``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_site import site_url  # noqa: E402, F401  -- a fixture, found here by pytest
