"""Browser tests of the built book, in headless Debian Chromium, offline.

Every page in the table of contents is served from ``_build/html`` on 127.0.0.1 and loaded
with every non-local host unresolvable. Each page must load with no JavaScript error and no
request leaving localhost; every plotly figure must render; every choice button must draw
its figure; moving a slider must change the plot. ``make test`` builds the book first.

Each page is loaded once on the desktop screen for all of these checks and those of
``test_screens.py`` on that screen (``browser_pages.py`` says how, and in what order).
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlparse

import pytest
from browser_pages import (
    DESKTOP,
    SITE,
    check,
    pages_with,
    toc_pages,
    wait_for,
)

pytestmark = pytest.mark.browser


def requests_made(driver) -> list[str]:
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def js_errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def assert_no_errors_and_offline(driver, page):
    errors = js_errors(driver)
    assert not errors, f"JavaScript errors on {page}: {errors}"
    for url in requests_made(driver):
        parsed = urlparse(url)
        internal = parsed.scheme in ("data", "blob", "about", "chrome")  # never the network
        local = internal or parsed.hostname == "127.0.0.1"
        assert local, f"{page} requested {url}: the book must not need the network"


@check(DESKTOP, toc_pages())
def test_page_loads_offline_without_errors(driver, page):
    assert_no_errors_and_offline(driver, page)
    body = driver.find_element("tag name", "body").text
    assert "needs plotly.js" not in body, f"{page}: a figure found no plotly.js"
    has_math = driver.execute_script("return document.querySelectorAll('.math').length")
    if has_math:
        wait_for(
            driver,
            "return document.querySelectorAll('mjx-container').length",
            20,
            f"MathJax to typeset the math on {page}",
        )


def figure_pages() -> list[str]:
    pages = []
    for page in toc_pages():
        html = SITE / f"{page}.html"
        if html.is_file() and 'class="scaleout-figure' in html.read_text():
            pages.append(page)
    return pages


@check(DESKTOP, figure_pages() or ["<no figures built>"])
def test_every_figure_choice_and_slider_works(driver, page):
    assert page != "<no figures built>", "no page of the built book holds a figure"
    # Every option of every choice draws its own figure when picked.
    choices = driver.find_elements("css selector", ".scaleout-choice")
    for choice in choices:
        buttons = choice.find_elements("css selector", ".scaleout-choice-bar button")
        assert len(buttons) >= 2, "a choice with fewer than two options"
        for button in buttons:
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
            button.click()
            assert button.get_attribute("aria-checked") == "true"
            index = button.get_attribute("data-index")
            fig_id = f"{choice.get_attribute('id')}-{index}"
            wait_for(
                driver,
                f"const el = document.getElementById('{fig_id}');"
                "return el.offsetParent !== null && el.querySelector('.main-svg');",
                what=f"figure {fig_id} to draw after its button was clicked",
            )
    # Every slider of every visible animated figure changes its plot when moved.
    checked = 0
    for fig in driver.find_elements("css selector", ".scaleout-figure"):
        if not fig.is_displayed() or not fig.find_elements("css selector", ".slider-container"):
            continue
        fig_id = fig.get_attribute("id")
        state = (
            f"const gd = document.getElementById('{fig_id}');"
            "return JSON.stringify([gd.layout.sliders[0].active, gd.data]);"
        )
        before = driver.execute_script(state)
        rail = fig.find_element("css selector", ".slider-rail-touch-rect")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", fig)
        from selenium.webdriver import ActionChains

        width = rail.size["width"]
        ActionChains(driver).move_to_element_with_offset(rail, width // 2 - 3, 0).click().perform()
        wait_for(
            driver,
            f"return JSON.stringify([document.getElementById('{fig_id}').layout.sliders[0].active,"
            f"document.getElementById('{fig_id}').data]) !== {json.dumps(before)};",
            10,
            f"the slider of {fig_id} to change the plot",
        )
        checked += 1
    errors = js_errors(driver)
    assert not errors, f"JavaScript errors on {page} after interaction: {errors}"
    if 'class="slider-container' in driver.page_source or checked:
        assert checked > 0


FIGURE_STATE = """
const gd = document.getElementById(arguments[0]);
return gd && gd.data ? JSON.stringify([gd.data, gd.layout.title, gd.layout.annotations,
  gd.layout.shapes, gd.layout.xaxis && gd.layout.xaxis.range,
  gd.layout.yaxis && gd.layout.yaxis.range]) : null;
"""


def _move(driver, control):
    """Move one static-explorer control away from its current value, as a reader would
    (keyboard on a range input, a click on another option of a select)."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", control)
    if control.tag_name == "select":
        select = Select(control)
        current = int(control.get_attribute("value"))
        count = len(select.options)
        select.select_by_index((current + 1) % count)
    else:
        at_end = control.get_attribute("value") == control.get_attribute("max")
        control.send_keys(Keys.HOME if at_end else Keys.END)


@check(DESKTOP, pages_with('class="scaleout-explorer"') or ["<none built>"])
def test_every_control_of_every_explorer_redraws_its_figure(driver, page):
    """In the static book, with no kernel: every control of every explorer changes the
    figure (the precomputed state for the new combination is drawn), with no errors."""
    assert page != "<none built>", "no page of the built book holds an explorer"
    explorers = driver.find_elements("css selector", ".scaleout-explorer[data-explorer]")
    assert explorers
    for explorer in explorers:
        name = explorer.get_attribute("data-explorer")
        wait_for(
            driver,
            f"return document.getElementById('{name}').dataset.state !== undefined",
            what=f"explorer {name} to draw its first state",
        )
        controls = explorer.find_elements("css selector", ".scaleout-control-input")
        assert controls, f"explorer {name} has no controls in the static page"
        for control in controls:
            key = control.get_attribute("data-key")
            if control.get_attribute("disabled"):
                continue  # one value only: the page shows it, nothing to move
            label = driver.execute_script(
                "return document.querySelector(`label[for='${arguments[0].id}']`).textContent",
                control,
            )
            assert label, f"control {key} of {name} has no label"
            before = driver.execute_script(FIGURE_STATE, name)
            state = driver.execute_script(f"return document.getElementById('{name}').dataset.state")
            _move(driver, control)
            wait_for(
                driver,
                f"return document.getElementById('{name}').dataset.state !== '{state}'",
                10,
                f"explorer {name} to redraw after moving {key}",
            )
            after = driver.execute_script(FIGURE_STATE, name)
            assert after != before, f"moving {key} of {name} did not change its figure"
    assert_no_errors_and_offline(driver, page)


@check(DESKTOP, [p for p in toc_pages() if p.startswith("chapters/")])
def test_check_cells_are_folded_and_open_on_click(driver, page):
    """The asserts that check the prose sit in cells folded by default; a click opens them.
    Every page ends with a link that opens a pre-filled issue naming the page."""
    folded = driver.find_elements("css selector", "details.hide.above-input")
    checks = [d for d in folded if "checks" in d.find_element("tag name", "summary").text.lower()]
    assert checks, f"{page}: no folded check cells"
    for details in checks:
        assert details.get_attribute("open") is None, f"{page}: a check cell starts open"
    first = checks[0]
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", first)
    first.find_element("tag name", "summary").click()
    assert driver.execute_script("return arguments[0].open", first)
    # The code is laid out after the toggle's animation: wait for it to show.
    shown = (
        f"return document.querySelectorAll('details.hide.above-input')[{folded.index(first)}]"
        ".innerText.includes('assert')"
    )
    wait_for(driver, shown, 10, f"the opened check cell of {page} to show its checks")
    link = driver.find_element("css selector", ".scaleout-report a")
    href = link.get_attribute("href")
    assert "/issues/new?" in href and quote(page, safe="") in href, href
