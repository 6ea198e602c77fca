"""JupyterLab, as a reader on Binder or on their own machine uses the chapters.

JupyterLab is started from the project's environment (token off, loopback only, its own
settings folder: no news toast, no update check, no autosave, every cell rendered) on a
temporary copy of the chapters, so nothing it writes can touch the committed notebooks.
Headless Chromium opens each chapter, runs every cell in a fresh kernel, and checks that
every code cell ran
without an error output, that plotly figures are drawn, that MyST (admonitions, exercises)
is rendered by jupyterlab-myst rather than shown as raw text, and that moving a control of
each explorer redraws its figure. Slow (it executes every chapter); ``make test`` runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from repo_paths import ROOT, TOOLS

sys.path[:0] = [str(TOOLS), str(Path(__file__).resolve().parent)]
import notebook as N  # noqa: E402
from test_site import CHROMEDRIVER, CHROMIUM, wait_for  # noqa: E402

JUPYTER = Path(sys.executable).with_name("jupyter")
CHAPTERS = [p.relative_to(ROOT).as_posix() for p in N.chapter_paths(ROOT)]
pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETTINGS = {
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab_url(tmp_path_factory):
    if not JUPYTER.exists():
        pytest.fail(f"jupyter not found next to {sys.executable}")
    tmp = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "chapters", tmp / "book" / "chapters")
    for name, values in SETTINGS.items():
        path = tmp / "settings" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        OMP_NUM_THREADS="1",
    )
    port = _free_port()
    cmd = [
        str(JUPYTER), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--IdentityProvider.token=", "--ServerApp.password=",
        f"--ServerApp.root_dir={tmp / 'book'}", "--LabApp.expose_app_in_browser=True",
        "--ServerApp.open_browser=False",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    log = open(tmp / "lab.log", "w")  # noqa: SIM115 - closed below
    lab = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                if lab.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{(tmp / 'lab.log').read_text()}")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        lab.terminate()
        try:
            lab.wait(15)
        except subprocess.TimeoutExpired:
            lab.kill()
        log.close()
        shutil.rmtree(tmp / "runtime", ignore_errors=True)


@pytest.fixture(scope="module")
def lab_driver(tmp_path_factory):
    from selenium import webdriver

    for path in (CHROMIUM, CHROMEDRIVER):
        if not Path(path).exists():
            pytest.fail(f"{path} is missing: run tools/ensure-chromium")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium-lab')}",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(arg)
    drv = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
    drv.set_script_timeout(60)
    yield drv
    drv.quit()


NOTEBOOK_STATE = """
const nb = jupyterapp.shell.currentWidget;
if (!nb || !nb.content || !nb.content.model || !nb.sessionContext.session) return null;
const cells = nb.content.model.cells;
let code = 0, ran = 0, errors = [], plotly = 0;
for (let i = 0; i < cells.length; i++) {
  const c = cells.get(i);
  if (c.type !== 'code') continue;
  code++;
  if (c.executionCount) ran++;
  for (let j = 0; j < c.outputs.length; j++) {
    const o = c.outputs.get(j);
    if (o.type === 'error') errors.push([i, o.toJSON().ename, o.toJSON().evalue]);
    if (o.data && o.data['application/vnd.plotly.v1+json']) plotly++;
  }
}
const kernel = nb.sessionContext.session.kernel;
return {code, ran, errors, plotly, status: kernel ? kernel.status : 'none',
        drawn: nb.node.querySelectorAll('.js-plotly-plot .main-svg').length};
"""

EXPLORER_FIGURE = """
const outs = jupyterapp.shell.currentWidget.node.querySelectorAll('.widget-output');
const gd = outs[arguments[0]] && outs[arguments[0]].querySelector('.js-plotly-plot');
return gd && gd.data ? JSON.stringify([gd.data.map(t => [t.x, t.y, t.z]), gd.layout.title]) : null;
"""


MARKDOWN_STATE = """
const node = jupyterapp.shell.currentWidget.node;
const md = [...node.querySelectorAll('.jp-MarkdownCell')];
return [md.map(c => c.innerText).join('\\n'), node.querySelectorAll('aside').length];
"""

MOVE_CONTROL = """
const node = jupyterapp.shell.currentWidget.node;
const out = node.querySelectorAll('.widget-output')[arguments[0]];
const box = out.closest('.widget-vbox') || out.parentElement;
const handle = box.querySelector('.noUi-handle');
if (handle) {
  handle.scrollIntoView({block: 'center'});
  handle.focus();
  return 'slider';
}
const select = box.querySelector('select');
if (select) {
  select.selectedIndex = (select.selectedIndex + 1) % select.options.length;
  select.dispatchEvent(new Event('change', {bubbles: true}));
  return 'select';
}
return null;
"""


def _open_and_run(driver, url, chapter):
    driver.get(f"{url}/lab/tree/{chapter}?reset")  # a fresh workspace: only this notebook
    wait_for(
        driver,
        "return !!(window.jupyterapp && jupyterapp.shell.currentWidget &&"
        f" jupyterapp.shell.currentWidget.context.path === {json.dumps(chapter)} &&"
        " jupyterapp.shell.currentWidget.sessionContext &&"
        " jupyterapp.shell.currentWidget.sessionContext.session &&"
        " jupyterapp.shell.currentWidget.sessionContext.session.kernel &&"
        " jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle')",
        120,
        f"a kernel for {chapter}",
    )
    driver.execute_script("jupyterapp.commands.execute('notebook:run-all-cells')")
    deadline = time.monotonic() + 900
    state = None
    while time.monotonic() < deadline:
        state = driver.execute_script(NOTEBOOK_STATE)
        if state and (
            state["errors"] or (state["ran"] == state["code"] and state["status"] == "idle")
        ):
            break
        time.sleep(1)
    return state


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_and_responds_in_jupyterlab(lab_driver, lab_url, chapter):
    driver = lab_driver
    state = _open_and_run(driver, lab_url, chapter)
    try:
        assert state is not None, f"{chapter} did not open"
        assert not state["errors"], f"{chapter}: error outputs {state['errors']}"
        assert state["ran"] == state["code"], f"{chapter}: {state['ran']}/{state['code']} ran"
        # Plotly figures: every plotly output drawn by the lab extension.
        wait_for(
            driver,
            "return jupyterapp.shell.currentWidget.node"
            f".querySelectorAll('.js-plotly-plot .main-svg').length >= {state['plotly']};",
            60,
            f"the {state['plotly']} plotly figures of {chapter} to draw",
        )
        # MyST: admonitions and exercises rendered, no raw directive text.
        rendered = driver.execute_script(MARKDOWN_STATE)
        text, asides = rendered
        assert asides >= 1, f"{chapter}: no admonition rendered (is jupyterlab-myst enabled?)"
        assert ":::{admonition}" not in text and "```{exercise}" not in text
        assert "Exercise 1" in text, f"{chapter}: exercises not rendered"
        # Explorers: moving the first control of each redraws its figure.
        explorers = driver.execute_script(
            "return jupyterapp.shell.currentWidget.node.querySelectorAll('.widget-output').length"
        )
        for k in range(explorers):
            before = driver.execute_script(EXPLORER_FIGURE, k)
            if before is None:
                continue  # an Output widget without a figure
            moved = driver.execute_script(
                MOVE_CONTROL,
                k,
            )
            assert moved, f"{chapter}: explorer {k} has no control"
            if moved == "slider":
                from selenium.webdriver.common.keys import Keys

                handle = driver.switch_to.active_element
                handle.send_keys(Keys.ARROW_RIGHT)
                if driver.execute_script(EXPLORER_FIGURE, k) == before:
                    handle.send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT)
            changed = (
                "const f = () => {" + EXPLORER_FIGURE.replace("arguments[0]", str(k)) + "};"
                f"const now = f(); return now !== null && now !== {json.dumps(before)};"
            )
            wait_for(driver, changed, 60, f"explorer {k} of {chapter} to redraw")
    finally:
        driver.execute_script(
            "const nb = jupyterapp.shell.currentWidget;"
            "if (nb && nb.sessionContext) { nb.sessionContext.shutdown(); }"
        )
        time.sleep(1)
