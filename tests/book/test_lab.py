"""JupyterLab, as a reader on Binder or on their own machine uses the chapters.

JupyterLab is started from the project's environment (token off, loopback only, its own
settings folder: no news toast, no update check, no autosave, every cell rendered) on a
temporary copy of the chapters, so nothing it writes can touch the committed notebooks.
Headless Chromium drives it. No chapter is executed in full here: ``make test`` executes
each chapter twice under nbval, which proves that the committed outputs are what running
the chapter gives, so Lab is tested on those outputs and on one live run:

* every chapter, opened as committed: no error output, every plotly figure drawn by the
  lab extension, and MyST (admonitions, exercises) rendered by jupyterlab-myst rather than
  shown as raw text;
* :data:`LIVE_CHAPTER`, its committed outputs cleared, and four of its cells run one after
  the other in a fresh kernel: the imports, the first explorer, the first distributed cell
  (processes forked from the Lab kernel) and the check after it. Each ran without an error
  and printed what it printed when the outputs were committed, and moving a control of the
  explorer redraws its figure in the live kernel. (So no chapter runs a third time here.)

Explorers are one class (``scaleout.widgets.Explorer``) whatever the chapter, so one live
explorer tests the kernel round trip; each chapter's figures for every control value are
tested in the static site (``tests/book/test_site.py``) and by nbval.
"""

from __future__ import annotations

import configparser
import json
import os
import re
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
from browser_pages import CHROMEDRIVER, chromium_options, wait_for  # noqa: E402

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

    options = chromium_options(tmp_path_factory.mktemp("chromium-lab"), (1400, 1000))
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
const out = jupyterapp.shell.currentWidget.node.querySelectorAll('.widget-output')[arguments[0]];
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


#: The chapter run live (a few of its cells): an explorer and a distributed cell that need
#: nothing but the imports.
LIVE_CHAPTER = "chapters/01_collectives.ipynb"

OPEN_STATE = """
const nb = jupyterapp.shell.currentWidget;
if (!nb || !nb.content || !nb.content.model) return null;
const cells = nb.content.model.cells;
let code = 0, errors = [], plotly = 0;
for (let i = 0; i < cells.length; i++) {
  const c = cells.get(i);
  if (c.type !== 'code') continue;
  code++;
  for (let j = 0; j < c.outputs.length; j++) {
    const o = c.outputs.get(j);
    if (o.type === 'error') errors.push([i, o.toJSON().ename, o.toJSON().evalue]);
    if (o.data && o.data['application/vnd.plotly.v1+json']) plotly++;
  }
}
return {code, errors, plotly, cells: cells.length,
        drawn: nb.node.querySelectorAll('.js-plotly-plot .main-svg').length};
"""

RUN_STATE = """
const nb = jupyterapp.shell.currentWidget, which = arguments[0];
const cells = nb.content.model.cells;
let ran = 0, outputs = 0, errors = [], streams = {};
for (let k = 0; k < cells.length; k++) {
  const c = cells.get(k);
  if (c.type !== 'code') continue;
  outputs += c.outputs.length;
  if (!which.includes(k)) continue;
  if (c.executionCount) ran++;
  let text = '';
  for (let j = 0; j < c.outputs.length; j++) {
    const o = c.outputs.get(j).toJSON();
    if (o.output_type === 'error') errors.push([k, o.ename, o.evalue]);
    if (o.output_type === 'stream') text += Array.isArray(o.text) ? o.text.join('') : o.text;
  }
  streams[k] = text;
}
const counts = [];
for (let k = 0; k < cells.length; k++) {
  const c = cells.get(k);
  if (c.type === 'code' && c.executionCount) counts.push(k);
}
const kernel = nb.sessionContext.session.kernel;
return {ran, outputs, errors, streams, counts, status: kernel ? kernel.status : 'none'};
"""

RUN_CELL = """
const nb = jupyterapp.shell.currentWidget;
nb.content.deselectAll();
nb.content.activeCellIndex = arguments[0];
jupyterapp.commands.execute('notebook:run-cell');
"""


def _wait(driver, script, timeout, what):
    """``wait_for``, but a script that times out (a renderer still busy drawing a long
    chapter's figures on a loaded machine) is asked again until ``timeout``."""
    from selenium.common.exceptions import TimeoutException

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if driver.execute_script(script):
                return
        except TimeoutException:
            pass
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


#: Whether the JupyterLab page in the browser may open the next chapter itself: it does after
#: a chapter opened, passed its checks and was closed (``_shutdown``); after a failure, or for
#: the live run, JupyterLab is loaded afresh.
LAB_REUSABLE = [False]


def _open(driver, url, chapter, kernel: bool, reuse: bool = False):
    """Open ``chapter``; with ``kernel``, wait until its kernel is idle (a chapter checked as
    committed needs none). With ``reuse``, in the JupyterLab page already loaded, if the last
    chapter closed cleanly (no other notebook open: the last one was closed); else in
    JupyterLab loaded afresh in a fresh workspace (only this notebook)."""
    reusable, LAB_REUSABLE[0] = LAB_REUSABLE[0], False
    if reuse and reusable and driver.execute_script("return !!window.jupyterapp"):
        driver.execute_script(
            "jupyterapp.commands.execute('docmanager:open', {path: arguments[0]})", chapter
        )
    else:
        driver.get(f"{url}/lab/tree/{chapter}?reset")  # a fresh workspace: only this notebook
    ready = (
        "return !!(window.jupyterapp && jupyterapp.shell.currentWidget &&"
        " jupyterapp.shell.currentWidget.context &&"  # not the launcher of an emptied Lab
        f" jupyterapp.shell.currentWidget.context.path === {json.dumps(chapter)} &&"
        " jupyterapp.shell.currentWidget.context.isReady"
    )
    if kernel:
        ready += (
            " && jupyterapp.shell.currentWidget.sessionContext &&"
            " jupyterapp.shell.currentWidget.sessionContext.session &&"
            " jupyterapp.shell.currentWidget.sessionContext.session.kernel &&"
            " jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
        )
    _wait(driver, ready + ")", 300, f"{chapter}" + (" and its kernel" if kernel else ""))


SHUTDOWN = """
const done = arguments[arguments.length - 1];
const nb = jupyterapp.shell.currentWidget;
if (!nb || !nb.sessionContext) { done('no notebook'); return; }
// Once its session has started (or failed to), its kernel shut down and the notebook closed
// (disposed: no 'unsaved changes' dialog), with nothing else open in the main area.
nb.sessionContext.ready.catch(() => null)
  .then(() => nb.sessionContext.shutdown())
  .then(() => { nb.dispose(); done(null); }, e => done(String(e)));
"""


def _shutdown(driver) -> bool:
    """Shuts the current notebook's kernel down and closes it; True if that went cleanly."""
    from selenium.common.exceptions import WebDriverException

    try:
        return driver.execute_async_script(SHUTDOWN) is None
    except WebDriverException:  # a script timeout: the next chapter reloads JupyterLab
        return False


def _check_myst(driver, chapter):
    """Admonitions and exercises rendered by jupyterlab-myst, no raw directive text."""
    _wait(
        driver,
        "return [...jupyterapp.shell.currentWidget.node.querySelectorAll('.jp-MarkdownCell')]"
        ".every(c => c.innerText.trim().length > 0);",
        180,
        f"every markdown cell of {chapter} to render",
    )
    text, asides = driver.execute_script(MARKDOWN_STATE)
    assert asides >= 1, f"{chapter}: no admonition rendered (is jupyterlab-myst enabled?)"
    assert ":::{admonition}" not in text and "```{exercise}" not in text
    assert "Exercise 1" in text, f"{chapter}: exercises not rendered"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_opens_as_committed_in_jupyterlab(lab_driver, lab_url, chapter):
    driver = lab_driver
    _open(driver, lab_url, chapter, kernel=False, reuse=True)
    passed = False
    try:
        state = driver.execute_script(OPEN_STATE)
        assert state is not None and state["code"] > 0, f"{chapter} did not open"
        assert not state["errors"], f"{chapter}: committed error outputs {state['errors']}"
        assert state["plotly"] > 0, f"{chapter}: no plotly output committed"
        _wait(
            driver,
            "return jupyterapp.shell.currentWidget.node"
            f".querySelectorAll('.js-plotly-plot .main-svg').length >= {state['plotly']};",
            180,
            f"the {state['plotly']} committed plotly figures of {chapter} to draw",
        )
        _check_myst(driver, chapter)
        passed = True
    finally:
        closed = _shutdown(driver)
        LAB_REUSABLE[0] = passed and closed


def _live_cells(path) -> tuple[int, list[int]]:
    """``(dist, cells)``: the index (among all cells) of the first distributed cell of
    ``path``, and the cells a live run executes: the first code cell (the imports), the first
    explorer, the distributed cell and the code cell after it (its check)."""
    cells = N.load(path).cells
    # Colab's install cell (tools/colab_cell.py) does nothing here: the imports come after it.
    code = [
        i for i, c in enumerate(cells) if c.cell_type == "code" and c.get("id") != "colab-install"
    ]
    calls = re.compile(r"\brun\([^)]*nprocs")
    dist = next(i for i in code if calls.search(cells[i].source))
    explorer = next(i for i in code if "Explorer(" in cells[i].source)
    check = next(i for i in code if i > dist)
    return dist, sorted({code[0], explorer, dist, check})


def _committed_streams(path, which) -> tuple[dict[int, str], list]:
    """Stream text of the code cells ``which`` as committed (cells whose output nbval ignores
    left out), and nbval's sanitizing rules (``tests/nbval_sanitize.cfg``)."""
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "tests" / "nbval_sanitize.cfg")
    rules = [(re.compile(s["regex"]), s["replace"]) for s in cfg.values() if "regex" in s]
    out = {}
    for i, cell in enumerate(N.load(path).cells):
        if i not in which or "nbval-ignore-output" in cell.metadata.get("tags", []):
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
        out[i] = text
    return out, rules


def test_a_chapter_runs_live_in_jupyterlab(lab_driver, lab_url):
    driver, chapter = lab_driver, LIVE_CHAPTER
    dist, which = _live_cells(ROOT / chapter)
    committed, rules = _committed_streams(ROOT / chapter, which)
    _open(driver, lab_url, chapter, kernel=True)
    try:
        # Clear the committed outputs and execution counts: what follows is the live run's.
        driver.execute_script("jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        _wait(
            driver,
            "const cells = jupyterapp.shell.currentWidget.content.model.cells;"
            "for (let k = 0; k < cells.length; k++) { const c = cells.get(k);"
            " if (c.type === 'code' && (c.outputs.length || c.executionCount)) return false; }"
            "return true;",
            60,
            f"the outputs of {chapter} to clear",
        )
        for k in which:  # one cell at a time, each after the previous one finished
            driver.execute_script(RUN_CELL, k)
            deadline, state = time.monotonic() + 600, None
            while time.monotonic() < deadline:
                state = driver.execute_script(RUN_STATE, which)
                if state["errors"] or (k in state["counts"] and state["status"] == "idle"):
                    break
                time.sleep(0.5)
            assert not state["errors"], f"{chapter}: error outputs {state['errors']}"
            assert k in state["counts"], f"{chapter}: cell {k} did not run"
        assert state["counts"] == which, f"{chapter}: ran {state['counts']}, not {which}"

        def clean(text):
            for regex, replace in rules:
                text = regex.sub(replace, text)
            return text

        for i, text in committed.items():
            assert clean(state["streams"][str(i)]) == clean(text), f"{chapter} cell {i} printed"
        # The distributed cell ran its processes: each printed its line, as committed.
        assert "[rank 1]" in committed[dist], f"{chapter} cell {dist}: not distributed"
        assert clean(state["streams"][str(dist)]) == clean(committed[dist])
        _check_myst(driver, chapter)
        # Explorers among the cells that ran: moving the first control of each redraws it.
        outputs = "jupyterapp.shell.currentWidget.node.querySelectorAll('.widget-output')"
        ran = (f"[].concat(...{json.dumps(which)}.map(k => [...jupyterapp.shell.currentWidget"
               ".content.widgets[k].node.querySelectorAll('.widget-output')]))")  # fmt: skip
        figure, move = EXPLORER_FIGURE.replace(outputs, ran), MOVE_CONTROL.replace(outputs, ran)
        assert figure != EXPLORER_FIGURE and move != MOVE_CONTROL
        explorers = driver.execute_script(f"return {ran}.length")
        moved_any = False
        for k in range(explorers):
            before = driver.execute_script(figure, k)
            if before is None:
                continue  # an Output widget without a figure
            moved = driver.execute_script(move, k)
            assert moved, f"{chapter}: explorer {k} has no control"
            if moved == "slider":
                from selenium.webdriver.common.keys import Keys

                handle = driver.switch_to.active_element
                handle.send_keys(Keys.ARROW_RIGHT)
                if driver.execute_script(figure, k) == before:
                    handle.send_keys(Keys.ARROW_LEFT, Keys.ARROW_LEFT)
            changed = (
                "const f = () => {" + figure.replace("arguments[0]", str(k)) + "};"
                f"const now = f(); return now !== null && now !== {json.dumps(before)};"
            )
            wait_for(driver, changed, 60, f"explorer {k} of {chapter} to redraw")
            moved_any = True
        assert moved_any, f"{chapter}: no live explorer among the cells run"
    finally:
        _shutdown(driver)
