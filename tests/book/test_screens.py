"""The built book on every screen: a 390 px phone, dark mode, print, keyboard, axe-core.

Headless Debian Chromium (as ``tests/book/test_site.py``) over ``_build/html`` served on
127.0.0.1, every other host unresolvable. ``tools/ensure-chromium`` installs the browser and
``tools/ensure-axe`` installs axe-core (pinned, with its sha512, in tools/axe/package-lock.json);
``make test`` runs both before the tests.

What a reader must get, page by page:

* on a 390 px phone: no page pans sideways; no figure's title, axis title or legend leaves its
  SVG or meets the mode bar; no figure text under 9 px;
* in dark mode (followed from the OS preference): every button and control at 4.5:1 or more;
* by keyboard: the first explorer control within 40 Tab presses; the figure-switching buttons
  one tab stop, moved through with the arrow keys;
* printed: every figure within the page, controls and mode bars not printed;
* axe-core: no serious or critical violation.

Each page is loaded once per screen (desktop, phone, dark, wide and printed) for every check
on that screen, here and in ``test_site.py`` (``browser_pages.py`` says how, and in what order).
"""

from __future__ import annotations

import pytest
from browser_pages import (
    DARK,
    DESKTOP,
    DESKTOP_PX,
    PHONE,
    PHONE_PX,
    PRINT,
    WIDE_PX,
    check,
    pages_with,
    register,
    screen,
    settle,
    toc_pages,
    wait_for,
)
from repo_paths import ROOT

AXE = ROOT / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
MIN_FONT_PX = 9
PRINT_PX = 700  # A4 less the print stylesheet's 12 mm margins, in CSS pixels (703)
MIN_CONTRAST = 4.5
MAX_TABS = 40
AXE_PAGES = [
    "chapters/01_collectives",
    "chapters/05_pipeline_parallel",
    "chapters/10_nccl",
    "chapters/15_planner",
    "cheatsheet",
]
pytestmark = pytest.mark.browser


FIGURE_FITS = """
const MIN = arguments[0];
const out = [];
const within = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 &&
  a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom &&
  b.top < a.bottom;
const shown = el => {
  const r = el.getBoundingClientRect();
  const s = getComputedStyle(el);
  return r.width > 0 && r.height > 0 && s.display !== 'none' && s.visibility !== 'hidden' &&
    Number(s.opacity) > 0;
};
for (const fig of document.querySelectorAll('.scaleout-figure')) {
  if (fig.offsetParent === null) continue;
  const svg = fig.querySelector('.main-svg');
  if (!svg) { out.push(`${fig.id}: not drawn`); continue; }
  const box = svg.getBoundingClientRect();
  const bar = fig.querySelector('.modebar-container');
  const barBox = bar && shown(bar) && bar.querySelector('.modebar') &&
    bar.querySelector('.modebar').getBoundingClientRect();
  const parts = [...fig.querySelectorAll('.g-gtitle, [class*="title"] text, .legend')]
    .filter(el => el.closest('.scaleout-figure') === fig && shown(el) &&
      el.textContent.trim() !== '' && !el.closest('.hoverlayer'));
  for (const el of parts) {
    const r = el.getBoundingClientRect();
    const what = el.classList.contains('legend') ? 'legend' : (el.getAttribute('class') || 'title');
    if (!within(r, box)) {
      out.push(`${fig.id}: ${what} "${el.textContent.slice(0, 40)}" leaves its SVG ` +
        `(${Math.round(r.left)}..${Math.round(r.right)} x ${Math.round(r.top)}..` +
        `${Math.round(r.bottom)} in ${Math.round(box.left)}..${Math.round(box.right)} x ` +
        `${Math.round(box.top)}..${Math.round(box.bottom)})`);
    }
    if (barBox && barBox.width > 0 && meets(r, barBox)) {
      out.push(`${fig.id}: ${what} "${el.textContent.slice(0, 40)}" meets the mode bar`);
    }
  }
  // A legend clear of the x axis' title and tick labels, and of a slider.
  for (const lg of fig.querySelectorAll('.legend')) {
    if (!shown(lg)) continue;
    const lb = lg.getBoundingClientRect();
    for (const t of fig.querySelectorAll('.g-xtitle text, .xtick text, .slider-container')) {
      if (!shown(t) || !t.textContent.trim()) continue;
      const r = t.getBoundingClientRect();
      if (meets(r, lb)) {
        out.push(`${fig.id}: legend meets the x axis' or slider's "${t.textContent.slice(0, 30)}"`);
        break;
      }
    }
  }
  for (const t of fig.querySelectorAll('text')) {
    if (!t.textContent.trim() || !shown(t) || t.closest('.hoverlayer')) continue;
    const size = parseFloat(getComputedStyle(t).fontSize);
    if (size < MIN) {
      out.push(`${fig.id}: text "${t.textContent.slice(0, 30)}" at ${size.toFixed(1)} px`);
    }
  }
}
return out;
"""


@check(PHONE, toc_pages())
def test_phone_no_page_pans_sideways(driver, page):
    culprits = driver.execute_script(
        """
        const w = document.documentElement.clientWidth;
        if (document.documentElement.scrollWidth <= w + 1) return [];
        return [...document.querySelectorAll('.bd-article *')].filter(el => {
          const r = el.getBoundingClientRect();
          return r.right > w + 1 && r.width > 0 && el.offsetParent !== null &&
            !el.closest('.scaleout-scroll, .scaleout-scrolls, div.math, mjx-container, ' +
                        '.table-wrapper, pre, .highlight');
        }).slice(0, 5).map(el => el.tagName + '.' + el.className + ': ' +
          el.textContent.slice(0, 50));
        """
    )
    width = driver.execute_script("return document.documentElement.scrollWidth")
    assert width <= PHONE_PX[0] + 1, f"{page} is {width} px wide at {PHONE_PX[0]} px: {culprits}"


@check(PHONE, pages_with('class="scaleout-figure') or ["<no figures>"])
def test_phone_figures_keep_their_text_inside_and_readable(driver, page):
    assert page != "<no figures>", "no page of the built book holds a figure"
    problems = driver.execute_script(FIGURE_FITS, MIN_FONT_PX)
    assert not problems, f"{page} at {PHONE_PX[0]} px:\n" + "\n".join(problems[:20])


@check(DESKTOP, pages_with('class="scaleout-figure') or ["<no figures>"])
def test_desktop_figures_keep_their_text_inside_and_clear_of_the_mode_bar(driver, page):
    # The mode bar shows on hover: show every one, as a pointer over the figure would (and
    # hide again those this showed, for the checks after this one on the same load).
    shown = driver.execute_script(
        "const off = [...document.querySelectorAll('.modebar:not(.active)')];"
        "off.forEach(m => m.classList.add('active')); return off;"
    )
    try:
        problems = driver.execute_script(FIGURE_FITS, MIN_FONT_PX)
    finally:
        driver.execute_script("arguments[0].forEach(m => m.classList.remove('active'))", shown)
    assert not problems, f"{page} at {DESKTOP_PX[0]} px:\n" + "\n".join(problems[:20])


# WCAG colour helpers shared by the contrast checks below: rgba() parses a CSS colour,
# lum() is its relative luminance.
COLOUR_JS = """
function rgba(c) {
  const m = c.match(/rgba?\\(([^)]+)\\)/);
  if (!m) return null;
  const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
  return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1];
}
function lum([r, g, b]) {
  const f = x => { x /= 255; return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}
"""

CONTRAST = (
    """
const MIN = arguments[0];
"""
    + COLOUR_JS
    + """function background(el) {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let out = [255, 255, 255];
  for (const c of layers.reverse()) {
    out = out.map((v, i) => c[i] * c[3] + v * (1 - c[3]));
  }
  return out;
}
function mix(fg, bg) { return fg.slice(0, 3).map((v, i) => v * fg[3] + bg[i] * (1 - fg[3])); }
const bad = [];
const controls = document.querySelectorAll(
  'button, select, input, output, [role=button], [role=radio], .scaleout-control label');
for (const el of controls) {
  const r = el.getBoundingClientRect();
  const s = getComputedStyle(el);
  if (r.width === 0 || r.height === 0 || s.visibility === 'hidden' || s.display === 'none')
    continue;
  if (el.closest('.modebar-container, .hoverlayer')) continue;
  const text = (el.innerText || el.value || '').trim();
  const bg = background(el);
  // Text in the control, else its icon's colour (an icon-only button).
  const icon = !text && el.querySelector('svg, i, .fa-solid, .fa-brands, [class*="fa-"]');
  const fgEl = icon || el;
  // A slider shows no text: its thumb and filled track are drawn in its accent colour.
  const accent = el.type === 'range' && rgba(getComputedStyle(el).accentColor || '');
  const fg = mix(accent || rgba(getComputedStyle(fgEl).color), bg);
  const l1 = lum(fg), l2 = lum(bg);
  const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
  if (ratio < MIN) {
    bad.push(`${el.tagName}.${el.className} "${(text || el.getAttribute('aria-label') || '')
      .slice(0, 30)}": ${ratio.toFixed(2)}:1`);
  }
}
return bad;
"""
)


@check(DARK, toc_pages())
def test_dark_mode_follows_the_os_and_every_control_reads(driver, page):
    """Loaded with no stored mode or theme (``Screen.open`` clears the site's local storage)
    in a browser that prefers dark: the page is dark, every control at 4.5:1 or more."""
    theme = driver.execute_script("return document.documentElement.dataset.theme")
    assert theme == "dark", f"{page}: the OS asks for dark, the page is {theme}"
    bad = driver.execute_script(CONTRAST, MIN_CONTRAST)
    assert not bad, f"{page} in dark mode, under {MIN_CONTRAST}:1:\n" + "\n".join(bad[:20])


FIGURE_COLOURS = (
    COLOUR_JS
    + """const out = [];
for (const fig of document.querySelectorAll('.scaleout-figure')) {
  if (fig.offsetParent === null) continue;
  const svg = fig.querySelector('.main-svg');
  const bg = rgba(getComputedStyle(svg).backgroundColor);
  const title = fig.querySelector('.g-gtitle text') || fig.querySelector('.xtick text');
  const fg = title && rgba(getComputedStyle(title).fill);
  const ratio = fg ? (Math.max(lum(fg), lum(bg)) + 0.05) / (Math.min(lum(fg), lum(bg)) + 0.05)
    : null;
  out.push([fig.id, lum(bg), ratio, fig.dataset.theme]);
}
return out;
"""
)


@check(DARK, pages_with('class="scaleout-figure') or ["<no figures>"])
def test_dark_mode_figures_are_dark_with_readable_titles(driver, page):
    """In dark mode every figure's paper is dark (luminance under 0.05, as the theme's page)
    and its title (else its first tick label) reads at 4.5:1 or more; switching the theme
    redraws it light."""
    assert page != "<no figures>", "no page of the built book holds a figure"
    figures = driver.execute_script(FIGURE_COLOURS)
    assert figures, f"{page}: no figure drawn"
    bad = [f for f in figures if f[1] > 0.05 or f[2] is None or f[2] < MIN_CONTRAST]
    assert not bad, f"{page} in dark mode: [id, paper luminance, title contrast, theme] {bad}"
    driver.execute_script("document.documentElement.dataset.theme = 'light'")
    wait_for(
        driver,
        "return [...document.querySelectorAll('.scaleout-figure')].filter(f => f.offsetParent)"
        ".every(f => f.dataset.theme === 'light' && f.dataset.laidOut)",
        20,
        "the figures to redraw in the light theme",
    )
    light = driver.execute_script(FIGURE_COLOURS)
    bad = [f for f in light if f[1] < 0.9 or f[2] is None or f[2] < MIN_CONTRAST]
    assert not bad, f"{page} switched to light: [id, paper luminance, title contrast] {bad}"


@check(DESKTOP, pages_with('class="scaleout-explorer"') or ["<none>"])
def test_first_explorer_control_within_40_tab_presses(driver, page):
    """From the top of the page, Tab; a skip link met on the way is followed (Enter), as a
    keyboard reader would: the first explorer control has focus within 40 Tab presses."""
    from selenium.webdriver import ActionChains
    from selenium.webdriver.common.keys import Keys

    assert page != "<none>", "no page of the built book holds an explorer"
    wait_for(driver, "return document.querySelector('.scaleout-control-input')", 20, "controls")
    driver.execute_script("document.activeElement && document.activeElement.blur(); scrollTo(0,0)")
    trail = []
    for _ in range(MAX_TABS):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        here = driver.execute_script(
            "const a = document.activeElement; return [a.classList.contains("
            "'scaleout-control-input'), a.tagName + '.' + a.className + ' ' +"
            " (a.textContent || '').trim().slice(0, 25), a.classList.contains("
            "'scaleout-skip-explorer')];"
        )
        if here[2]:
            ActionChains(driver).send_keys(Keys.ENTER).perform()
            here = driver.execute_script(
                "const a = document.activeElement; return [a.classList.contains("
                "'scaleout-control-input'), a.tagName + '.' + a.className];"
            )
        if here[0]:
            return
        trail.append(here[1])
    raise AssertionError(
        f"{page}: no explorer control after {MAX_TABS} Tab presses; the last stops were "
        + "; ".join(trail[-12:])
    )


TAB_STOPS = """
// The page's tab sequence (tabindex >= 0, shown, enabled), in document order, up to the first
// explorer control; each stop with what it is.
const stops = [];
const all = document.querySelectorAll(
  'a[href], button, input, select, textarea, summary, [tabindex], mjx-container');
for (const el of all) {
  if (el.tabIndex < 0 || el.disabled) continue;
  const r = el.getBoundingClientRect();
  const s = getComputedStyle(el);
  if ((r.width === 0 && r.height === 0) || s.visibility === 'hidden') continue;
  if (el.classList.contains('scaleout-control-input')) return [stops, true];
  const scrolls = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
  stops.push({tag: el.tagName, cls: String(el.className).slice(0, 40),
    text: (el.textContent || '').trim().slice(0, 30), scrolls: scrolls,
    formula: !!el.closest('mjx-container, .MathJax'), modebar: !!el.closest('.modebar')});
}
return [stops, false];
"""
KINDS = {"A", "BUTTON", "SUMMARY", "INPUT", "SELECT"}


@check(DESKTOP, pages_with('class="scaleout-explorer"') or ["<none>"])
def test_every_tab_stop_before_the_first_explorer_does_something(driver, page):
    """Without the skip links, every Tab stop before the first explorer control is a link, a
    button, a control, a folded-cell toggle or a region that scrolls (reachable by keyboard as
    WCAG 2.1.1 asks): no mode-bar button, no formula or code box that does not scroll. Prints
    the count (the 40-press target is met through the skip link: see
    test_first_explorer_control_within_40_tab_presses)."""
    assert page != "<none>", "no page of the built book holds an explorer"
    wait_for(driver, "return document.querySelector('.scaleout-control-input')", 20, "controls")
    stops, found = driver.execute_script(TAB_STOPS)
    assert found, f"{page}: no explorer control in the tab sequence"
    idle = [s for s in stops if s["modebar"] or (s["tag"] not in KINDS and not s["scrolls"])]
    kinds = {}
    for s in stops:
        key = "scrolling box" if s["tag"] not in KINDS else s["tag"]
        kinds[key] = kinds.get(key, 0) + 1
    print(f"{page}: {len(stops)} tab stops before the first explorer control {kinds}")
    assert not idle, f"{page}: {len(idle)} tab stops that do nothing: {idle[:8]}"


@check(DESKTOP, pages_with('class="scaleout-choice"')[:3] or ["<none>"])
def test_figure_switches_are_one_tab_stop_moved_by_arrow_keys(driver, page):
    from selenium.webdriver.common.keys import Keys

    assert page != "<none>", "no page of the built book holds a figure switch"
    bar = driver.find_element("css selector", ".scaleout-choice-bar[role=radiogroup]")
    buttons = bar.find_elements("css selector", "button[role=radio]")
    stops = [b for b in buttons if b.get_attribute("tabindex") != "-1"]
    assert len(stops) == 1 and stops[0].get_attribute("aria-checked") == "true"
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", stops[0])
    driver.execute_script("arguments[0].focus()", stops[0])
    start = buttons.index(stops[0])
    stops[0].send_keys(Keys.ARROW_RIGHT)
    after = (start + 1) % len(buttons)
    wait_for(
        driver,
        "return arguments[0].getAttribute('aria-checked') === 'true' && "
        "document.activeElement === arguments[0] && arguments[0].tabIndex === 0",
        5,
        "the arrow key to choose the next option",
        buttons[after],
    )
    assert stops[0].get_attribute("tabindex") == "-1"


@check(PRINT, pages_with('class="scaleout-figure') or ["<no figures>"])
def test_printed_figures_fit_the_page(driver, page):
    """Loaded on a wide screen (figures drawn wider than a page, as on a large screen),
    then printed."""
    screen(driver, *WIDE_PX, media="print")
    settle(driver)  # the page's print listeners have run
    result = driver.execute_script(
        """
        const out = [];
        for (const fig of document.querySelectorAll('.scaleout-figure')) {
          if (fig.offsetParent === null) continue;
          // What plotly drew: its SVG layers (the container around them is 100% wide).
          const svgs = [...fig.querySelectorAll('.main-svg')];
          const w = svgs.length ? Math.max(...svgs.map(s => s.getBoundingClientRect().width))
            : Infinity;
          if (w > arguments[0] + 1) out.push(`${fig.id}: ${Math.round(w)} px wide`);
        }
        for (const el of document.querySelectorAll(
            '.modebar-container, .scaleout-explorer-controls, .scaleout-choice-bar')) {
          if (el.getBoundingClientRect().height > 0) out.push(`${el.className} is printed`);
        }
        const pre = [...document.querySelectorAll('.bd-article pre')]
          .filter(p => p.scrollWidth > p.clientWidth + 1);
        if (pre.length) out.push(`${pre.length} code blocks cut at the right edge`);
        return out;
        """,
        PRINT_PX,
    )
    screen(driver, *WIDE_PX)
    assert not result, f"{page} printed:\n" + "\n".join(result[:20])


def axe_violations(driver, page, mode):
    """Runs axe-core on the page as loaded: its serious and critical violations."""
    if not AXE.is_file():
        pytest.fail(f"{AXE} is missing: run tools/ensure-axe")
    driver.execute_script(AXE.read_text(encoding="utf-8"))
    found = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        axe.run(document, {resultTypes: ['violations']}).then(r => done(
          r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
            .map(v => `${v.impact} ${v.id}: ${v.nodes.length} nodes, e.g. ` +
              v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '))),
          e => done(['axe failed: ' + e]));
        """
    )
    assert not found, f"{page} ({mode}):\n" + "\n".join(found)


def axe_light(driver, page):
    axe_violations(driver, page, "light")


def axe_dark(driver, page):
    axe_violations(driver, page, "dark")


register(DESKTOP, "axe_light", axe_light)
register(DARK, "axe_dark", axe_dark)


@pytest.mark.parametrize("page", AXE_PAGES)
def test_axe_core_finds_no_serious_violation(shared_pages, page):
    """axe-core on the page in light mode, then in dark mode (each on the shared load of its
    screen, before any check that clicks)."""
    shared_pages.verdict(DESKTOP, "axe_light", page)
    shared_pages.verdict(DARK, "axe_dark", page)


test_axe_core_finds_no_serious_violation.shared_checks = (
    (DESKTOP, "axe_light"),
    (DARK, "axe_dark"),
)
