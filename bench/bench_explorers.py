"""Benchmark: how fast the explorers of the static book redraw, with no kernel.

Serves a built book (``_build/html``, or ``SCALEOUT_SITE``) on 127.0.0.1, opens every page
that holds an explorer in headless Chromium, and moves every control of every explorer
through its values, one step at a time, as a reader would. Each redraw is timed in the page
(``scaleout-explorer.js`` records, per draw, the time from resolving the packed state to
Plotly.react's promise). Prints, per explorer, the states it holds, the packed data it adds
to the page, and the median and worst redraw (``VERBOSE=1``: every redraw). Target: a
control change redraws in under 100 ms.

    make book && .venv/bin/python bench/bench_explorers.py
"""

from __future__ import annotations

import functools
import http.server
import os
import statistics
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("SCALEOUT_SITE", ROOT / "_build" / "html"))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    from selenium import webdriver
    from selenium.webdriver.support.ui import Select
    from test_site import CHROMEDRIVER, CHROMIUM, QuietHandler, toc_pages, wait_for

    pages = [p for p in toc_pages() if 'class="scaleout-explorer"' in _read(SITE / f"{p}.html")]
    if not pages:
        print(f"no explorer in {SITE}: run `make book` first")
        return 1
    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    worst = 0.0
    head = ("explorer", "states", "data", "redraws", "median", "max")
    print("{:34s} {:>6s} {:>9s} {:>7s} {:>8s} {:>8s}".format(*head))
    try:
        for page in pages:
            driver.get(f"http://127.0.0.1:{server.server_address[1]}/{page}.html")
            wait_for(driver, "return document.readyState === 'complete'")
            found = driver.find_elements("css selector", ".scaleout-explorer[data-explorer]")
            for explorer in found:
                name = explorer.get_attribute("data-explorer")
                state = f"return document.getElementById('{name}').dataset.state"
                wait_for(driver, f"return {state.removeprefix('return ')} !== undefined")
                data = explorer.find_element("css selector", "script.scaleout-explorer-data")
                size = len(data.get_attribute("textContent"))
                states = driver.execute_script(
                    "return JSON.parse(arguments[0].textContent).states.length", data
                )
                times = []
                for control in explorer.find_elements("css selector", ".scaleout-control-input"):
                    if control.get_attribute("disabled"):
                        continue
                    count = (
                        len(Select(control).options)
                        if control.tag_name == "select"
                        else int(control.get_attribute("max")) + 1
                    )
                    for k in range(count):
                        before = driver.execute_script(state)
                        if control.tag_name == "select":
                            Select(control).select_by_index(k)
                        else:
                            driver.execute_script(
                                "arguments[0].value = arguments[1];"
                                "arguments[0].dispatchEvent(new Event('input'));",
                                control,
                                str(k),
                            )
                        if driver.execute_script(state) == before and k == 0:
                            continue  # already at this value
                        wait_for(driver, f"{state} !== '{before}'", 10)
                        times.append(
                            float(
                                driver.execute_script(
                                    f"return document.getElementById('{name}').dataset.drawMs"
                                )
                            )
                        )
                if os.environ.get("VERBOSE"):
                    print(name, "redraws (ms):", [round(t) for t in times])
                if times:
                    worst = max(worst, max(times))
                    print(
                        f"{name:34s} {states:6d} {size / 1e3:7.0f} KB {len(times):7d} "
                        f"{statistics.median(times):6.1f} ms {max(times):6.1f} ms"
                    )
    finally:
        driver.quit()
        server.shutdown()
    print(f"worst redraw: {worst:.1f} ms (target < 100 ms)")
    return 0


def _read(path: Path) -> str:
    return path.read_text() if path.is_file() else ""


if __name__ == "__main__":
    sys.exit(main())
