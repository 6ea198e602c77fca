"""One headless Chromium for the browser tests of the built site, and each page loaded once
per screen.

``tests/book/test_site.py`` and ``test_screens.py`` check every page of the built book on a
few screens: a desktop in light mode, a 390 px phone, a desktop in dark mode, and a wide
screen printed. Each check is registered on its :class:`Screen` with :func:`check`, which
turns it into a test parametrized by page (one test id per check and page, as before). The
first test that asks for a page on a screen loads the page once, in that screen, and runs on
that one load every check of the screen that this session selected for the page, in the
screen's ``order``: read-only checks first, then those that press keys, then those that
click. Each check's outcome (its exception, or None) is kept, and each test raises its own,
so a failure names its page and check as before. A check that fails may leave the page in
any state: the page is loaded afresh before the next check.

``page_loads`` counts the loads (``driver.get``) made this session.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from repo_paths import ROOT

# Overridable to test a build made elsewhere (e.g. one chapter built with its own toc).
SITE = Path(os.environ.get("SCALEOUT_SITE", ROOT / "_build" / "html"))
TOC = Path(os.environ.get("SCALEOUT_TOC", ROOT / "_toc.yml"))
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
PAGE_LOAD_TIMEOUT_S = 90
SCRIPT_TIMEOUT_S = 120


def toc_pages() -> list[str]:
    """Docnames of every page in _toc.yml, in reading order."""
    toc = yaml.safe_load(TOC.read_text())
    pages = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(str(Path(entry["file"]).with_suffix("")))
            walk(entry.get("chapters"))
            walk(entry.get("sections"))

    walk(toc.get("parts"))
    walk(toc.get("chapters"))
    return pages


def pages_with(marker: str) -> list[str]:
    """The pages of the built book whose HTML holds ``marker``, in reading order."""
    out = []
    for page in toc_pages():
        path = SITE / f"{page}.html"
        if path.is_file() and marker in path.read_text():
            out.append(page)
    return out


def wait_for(driver, script, timeout=30.0, what="condition", *args):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_url():
    """The built book served on 127.0.0.1 (one server for the session)."""
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built book at {SITE}: run `make site` first")
    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def chromium_options(profile, window, *extra):
    """Headless Debian Chromium's options: no sandbox, no GPU, a ``window`` (width, height)
    in px, its own ``profile`` folder, and nothing but localhost resolving, so that a page
    that needs the network fails loudly; ``extra`` arguments added. Fails (never skips) when
    Chromium or its driver is missing: CI must fail without a browser."""
    from selenium import webdriver

    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            pytest.fail(f"{path} is missing: run tools/ensure-chromium (apt-get chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        f"--window-size={window[0]},{window[1]}",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost, EXCLUDE 127.0.0.1",
        *extra,
    ):
        options.add_argument(arg)
    return options


@pytest.fixture(scope="session")
def driver(tmp_path_factory):
    """Headless Debian Chromium, offline but for 127.0.0.1, with its console and network
    logged (one browser for the session)."""
    from selenium import webdriver  # never skipped: CI must fail without a browser

    options = chromium_options(
        tmp_path_factory.mktemp("chromium-profile"),
        DESKTOP_PX,
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--no-first-run",
        "--hide-scrollbars",
    )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    drv = webdriver.Chrome(options=options, service=service)
    drv.set_page_load_timeout(PAGE_LOAD_TIMEOUT_S)
    drv.set_script_timeout(SCRIPT_TIMEOUT_S)
    yield drv
    drv.quit()


PHONE_PX = (390, 844)
DESKTOP_PX = (1280, 1000)
WIDE_PX = (1800, 1000)


def screen(driver, width, height, *, dark=False, media=""):
    """Emulates a screen: viewport, colour-scheme preference, media type."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {
            "media": media,
            "features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}],
        },
    )


# Every visible figure drawn by plotly and laid out by scaleout-screens.js (which sets
# data-laid-out once its last relayout is done).
DRAWN = """
const figs = [...document.querySelectorAll('.scaleout-figure')]
  .filter(el => el.offsetParent !== null);
return figs.every(el => el.querySelector('.main-svg') && el.dataset.laidOut) ?
  figs.length + 1 : 0;
"""

# Once drawn: the fonts loaded, MathJax's first typesetting done (the page's scripts look for
# wide formulas then), every CSS transition or animation that ends (the theme's colours fading
# in) ended, and two frames rendered after that (media-query listeners and the timers they set
# have run by then); again while new transitions start, up to five rounds.
SETTLED = """
const done = arguments[arguments.length - 1];
const frames = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(
  () => setTimeout(r, 0))));
const ending = () => document.getAnimations().filter(a => a.playState === 'running' &&
  a.effect && Number.isFinite(a.effect.getComputedTiming().endTime));
(async () => {
  const math = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
  await Promise.all([document.fonts ? document.fonts.ready : null, math || null]);
  for (let round = 0; round < 5; round++) {
    await Promise.all(ending().map(a => a.finished.catch(() => null)));
    await frames();
    if (!ending().length) break;
  }
})().then(() => done(null), e => done(String(e)));
"""


def settle(driver):
    """Waits for the page to finish what it does after a change (no fixed sleep)."""
    driver.execute_async_script(SETTLED)


def load(driver, url):
    """Loads ``url`` in the current screen: the console and network logs start empty, and the
    page is complete, every visible figure drawn and laid out, and the page settled."""
    driver.get_log("performance")  # drop earlier entries
    driver.get_log("browser")
    driver.get(url)
    LOADS[0] += 1
    wait_for(driver, "return document.readyState === 'complete'", what="page load")
    wait_for(driver, DRAWN, what="every visible figure to draw")
    settle(driver)


LOADS = [0]  # page loads (driver.get) by load(), this session


@dataclass(frozen=True)
class Screen:
    """A browser configuration that checks share one load of each page in: its viewport and
    colour scheme, and the checks (test function names) in the order they run on a load."""

    name: str
    size: tuple[int, int]
    order: tuple[str, ...]
    dark: bool = False

    def open(self, driver, site_url, page):
        screen(driver, *self.size, dark=self.dark)
        # No mode or theme kept from an earlier page (a reader's first visit): the theme
        # follows the OS's colour scheme.
        driver.execute_cdp_cmd(
            "Storage.clearDataForOrigin", {"origin": site_url, "storageTypes": "local_storage"}
        )
        load(driver, f"{site_url}/{page}.html")


# The checks' order on one load. Read-only checks come first, those that press keys or
# change focus next, those that click (and change what is shown) last; a check that changes
# something later checks look at puts it back.
DESKTOP = Screen(
    "desktop",
    DESKTOP_PX,
    (
        "test_page_loads_offline_without_errors",  # reads the load's own console and requests
        "axe_light",
        "test_every_tab_stop_before_the_first_explorer_does_something",
        "test_desktop_figures_keep_their_text_inside_and_clear_of_the_mode_bar",
        "test_first_explorer_control_within_40_tab_presses",  # keys, from a page never clicked
        "test_check_cells_are_folded_and_open_on_click",  # opens one folded cell
        "test_figure_switches_are_one_tab_stop_moved_by_arrow_keys",  # picks the next option
        "test_every_figure_choice_and_slider_works",  # clicks every option, moves sliders
        "test_every_control_of_every_explorer_redraws_its_figure",  # moves every control
    ),
)
PHONE = Screen(
    "phone",
    PHONE_PX,
    (
        "test_phone_no_page_pans_sideways",
        "test_phone_figures_keep_their_text_inside_and_readable",
    ),
)
DARK = Screen(
    "dark",
    DESKTOP_PX,
    (
        "test_dark_mode_follows_the_os_and_every_control_reads",
        "axe_dark",
        "test_dark_mode_figures_are_dark_with_readable_titles",  # switches to light at its end
    ),
    dark=True,
)
PRINT = Screen("wide, printed", WIDE_PX, ("test_printed_figures_fit_the_page",))
SCREENS = (DESKTOP, PHONE, DARK, PRINT)

CHECKS: dict[tuple[str, str], object] = {}  # (screen, check) -> check(driver, page)
SELECTED: dict[tuple[str, str], set[str]] = {}  # (screen, page) -> checks this session runs


def register(screen: Screen, name: str, fn) -> None:
    if name not in screen.order:
        raise ValueError(f"check {name!r} is not in the order of the {screen.name} screen")
    CHECKS[screen.name, name] = fn


def check(screen: Screen, pages: list[str]):
    """Registers ``fn(driver, page)`` as a check of ``screen`` and returns, under its name, a
    test parametrized by ``pages`` that raises the check's outcome on the shared load."""

    def wrap(fn):
        register(screen, fn.__name__, fn)

        @pytest.mark.parametrize("page", pages)
        def test(shared_pages, page):
            shared_pages.verdict(screen, fn.__name__, page)

        # Not functools.wraps: pytest would follow __wrapped__ to fn's own arguments.
        test.__name__ = test.__qualname__ = fn.__name__
        test.__doc__, test.__module__ = fn.__doc__, fn.__module__
        test.shared_checks = ((screen, fn.__name__),)
        return test

    return wrap


def select(items) -> None:
    """Records which checks run on which page (the tests pytest selected)."""
    SELECTED.clear()
    for item in items:
        fn = getattr(item, "function", None)
        parts = getattr(fn, "shared_checks", None)
        if not parts or not hasattr(item, "callspec"):
            continue
        page = item.callspec.params.get("page")
        for screen, name in parts:
            SELECTED.setdefault((screen.name, page), set()).add(name)


class SharedPages:
    """Each page loaded once per screen; the outcome of every check run on that load."""

    def __init__(self, driver, site_url):
        self.driver, self.site_url = driver, site_url
        self.outcomes: dict[tuple[str, str], dict[str, BaseException | None]] = {}

    def verdict(self, screen: Screen, name: str, page: str) -> None:
        """Raises what check ``name`` raised on ``page`` in ``screen`` (None: it passed)."""
        key = (screen.name, page)
        if key not in self.outcomes:
            self.outcomes[key] = self._run(screen, page, SELECTED.get(key, set()) | {name})
        outcomes = self.outcomes[key]
        if name not in outcomes:  # not selected at collection: run it on a load of its own
            outcomes.update(self._run(screen, page, {name}))
        error = outcomes[name]
        if error is not None:
            raise error

    def _run(self, screen: Screen, page: str, wanted: set[str]) -> dict:
        names = [n for n in screen.order if n in wanted and (screen.name, n) in CHECKS]
        missing = wanted - set(names)
        if missing:
            raise ValueError(f"no check {sorted(missing)} registered on the {screen.name} screen")
        outcomes: dict[str, BaseException | None] = {}
        fresh = False
        for i, name in enumerate(names):
            if not fresh:
                try:
                    screen.open(self.driver, self.site_url, page)
                except Exception as error:  # every check left fails with the load's error
                    for rest in names[i:]:
                        outcomes[rest] = AssertionError(
                            f"{page} on the {screen.name} screen did not load: {error}"
                        )
                    break
                fresh = True
            try:
                CHECKS[screen.name, name](self.driver, page)
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # pytest.fail's exception too
                outcomes[name] = error
                fresh = False  # the next check starts from a new load
            else:
                outcomes[name] = None
        return outcomes
