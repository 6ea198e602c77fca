"""What each page of the built book costs a reader on a cold load, gzipped.

Loads every page of ``_toc.yml`` in headless Chromium (as the browser tests do), lists every
file the page fetched (``performance.getEntriesByType``), and adds up their sizes on disk,
raw and gzip-compressed (level 6, what a web server sends). Prints one row a page and the
largest files. Usage: ``python tools/page_weight.py [SITE_DIR]`` (default ``_build/html``).
"""

from __future__ import annotations

import functools
import gzip
import http.server
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import yaml

ROOT = Path(__file__).resolve().parents[1]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def toc_pages(toc: Path) -> list[str]:
    data = yaml.safe_load(toc.read_text())
    pages = [data["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(str(Path(entry["file"]).with_suffix("")))
            walk(entry.get("chapters"))

    walk(data.get("parts"))
    return pages


@functools.cache
def sizes(path: Path) -> tuple[int, int]:
    raw = path.read_bytes()
    return len(raw), len(gzip.compress(raw, 6))


def main(site: Path) -> None:
    from selenium import webdriver

    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000"):
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='weight-')}")
    service = webdriver.ChromeService(executable_path="/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=options, service=service)
    totals, biggest = [], {}
    try:
        for page in toc_pages(ROOT / "_toc.yml"):
            if not (site / f"{page}.html").is_file():
                continue
            driver.get(f"{base}/{page}.html")
            time.sleep(2.0)  # MathJax's fonts and components arrive after load
            urls = driver.execute_script(
                "return [location.href, ...performance.getEntriesByType('resource')"
                ".map(e => e.name)]"
            )
            raw = gz = 0
            for url in dict.fromkeys(urls):
                parsed = urlparse(url)
                if parsed.hostname != "127.0.0.1":
                    continue
                path = site / unquote(parsed.path).lstrip("/")
                if path.is_file():
                    r, g = sizes(path)
                    raw, gz = raw + r, gz + g
                    biggest[path.relative_to(site)] = g
            totals.append((page, raw, gz))
            print(f"{page:40s} {raw / 1e6:7.2f} MB raw {gz / 1e6:7.2f} MB gzipped")
    finally:
        driver.quit()
        server.shutdown()
    chapters = [t for t in totals if t[0].startswith("chapters/")]
    if chapters:
        mean = sum(t[2] for t in chapters) / len(chapters)
        print(f"mean over {len(chapters)} chapters: {mean / 1e6:.2f} MB gzipped")
    for name, g in sorted(biggest.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {g / 1e3:8.1f} KB gzipped  {name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html")
