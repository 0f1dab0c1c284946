"""The Explorer in a real browser: JupyterLab on a free loopback port, driven by Playwright with Debian's
Chromium. Runs a small notebook, then clicks a tree node, a byte and a frame row, and checks the DOM's
data-attributes and the kernel-side traitlets (both directions of the selection).

Needs: jupyterlab, anywidget, playwright (Python package only; no ``playwright install``) and Debian's
chromium; without one the tests skip, under CI they fail (tests/tools.py).
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.tools import require, require_tool

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
REPO = Path(__file__).resolve().parents[2]
KEY_PATH = "topic_data[0].partition_data[0].records[0].records[0].key"
NOTEBOOK_CODE = """\
from kafkalab.notebook import explore, sample_frames
frames = sample_frames()
ex = explore(frames, height="640px")
ex"""


for module in ("jupyterlab", "anywidget", "playwright"):
    require(module, importlib.util.find_spec(module) is not None, "the test extra (make test)")
CHROMIUM = require_tool("chromium")

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_notebook(path: Path) -> None:
    notebook = {
        "cells": [{"cell_type": "code", "execution_count": None, "id": "explore", "metadata": {},
                   "outputs": [], "source": NOTEBOOK_CODE}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    write_notebook(root / "explore.ipynb")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
               JUPYTER_RUNTIME_DIR=str(root / ".runtime"), JUPYTER_CONFIG_DIR=str(root / ".config"),
               MPLBACKEND="Agg")
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
               "--ServerApp.disable_check_xsrf=True", "--LabApp.expose_app_in_browser=True",
               "--LabApp.news_url=None", f"--ServerApp.root_dir={root}",
               f"--LabApp.user_settings_dir={root / '.settings'}", f"--LabApp.workspaces_dir={root / '.workspaces'}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = open(root / "jupyterlab.log", "wb")
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited: {(root / 'jupyterlab.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "api/status", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start: {(root / 'jupyterlab.log').read_text()[-2000:]}")
            time.sleep(0.25)
        LAB_ROOT[url] = root
        yield url
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            server.wait(timeout=5)
        log.close()


LAB_ROOT: dict[str, Path] = {}   # server url -> its root folder

KERNEL_IDLE = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = widget && widget.sessionContext && widget.sessionContext.session
                 && widget.sessionContext.session.kernel;
  return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""

RUN_IN_KERNEL = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  let out = "";
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === "stream") out += msg.content.text;
    if (msg.header.msg_type === "error") out += "ERROR " + msg.content.ename + ": " + msg.content.evalue;
  };
  await future.done;
  return out;
}"""


def selected_offsets(page) -> list[int]:
    return page.eval_on_selector_all(".kl-hex .kl-byte.kl-sel", "cells => cells.map(c => Number(c.dataset.offset))")


def test_explorer_in_jupyterlab(lab) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.set_default_timeout(30_000)
            page.goto(lab + "lab/tree/explore.ipynb")
            page.wait_for_function(KERNEL_IDLE, timeout=60_000)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_selector('.kl-explorer[data-ready="1"]', state="attached")
            page.wait_for_selector('.kl-row[data-frame="1"].kl-selected')

            # the frame list, and its filter (applied by Python)
            assert page.locator(".kl-row").count() == 3
            page.fill(".kl-filter", "metadata")
            page.wait_for_function("() => document.querySelectorAll('.kl-row').length === 1")
            assert page.locator(".kl-row").get_attribute("data-frame") == "3"
            page.fill(".kl-filter", "")
            page.wait_for_function("() => document.querySelectorAll('.kl-row').length === 3")

            # select frame 2, expand topic_data[0], click its name: the name's bytes light up
            page.click('.kl-row[data-frame="2"]')
            page.wait_for_selector('.kl-node[data-path="acks"]')
            page.click('.kl-node[data-path="topic_data[0]"] > .kl-label > .kl-toggle')
            page.click('.kl-node[data-path="topic_data[0].name"] > .kl-label')
            page.wait_for_selector('.kl-hex[data-buffer="0"][data-sel-start="36"][data-sel-end="43"]')
            assert selected_offsets(page) == list(range(36, 43))
            assert page.eval_on_selector_all(".kl-hex .kl-char.kl-sel", "cs => cs.map(c => c.textContent).join('')") \
                == ".orders"
            assert page.evaluate(RUN_IN_KERNEL, "print(ex.selected_frame, ex.selected_path, ex.selected_range)") \
                == "2 topic_data[0].name (0, 36, 43)\n"

            # click a byte: the deepest field covering it is selected, in the tree and in Python
            page.click('.kl-hex .kl-byte[data-offset="30"]')
            page.wait_for_selector('.kl-tree[data-selected-path="acks"]')
            assert "acks: -1" in page.locator(".kl-label.kl-selected").inner_text()
            assert selected_offsets(page) == [29, 30]
            assert page.evaluate(RUN_IN_KERNEL, "print(ex.selected_path)") == "acks\n"

            # Python drives the selection into the inflated record data: the hex pane switches buffers
            assert page.evaluate(RUN_IN_KERNEL, f"print(ex.select({KEY_PATH!r}))") == "(1, 5, 12)\n"
            page.wait_for_selector('.kl-hex[data-buffer="1"][data-sel-start="5"][data-sel-end="12"]')
            assert page.eval_on_selector_all(".kl-hex .kl-char.kl-sel", "cs => cs.map(c => c.textContent).join('')") \
                == "order-1"
            page.wait_for_selector(f'.kl-node[data-path="{KEY_PATH}"] > .kl-label.kl-selected', state="visible")

            # a byte of the inflated buffer selects the record field inside it
            page.click('.kl-hex .kl-byte[data-offset="14"]')
            value_path = KEY_PATH.replace(".key", ".value")
            page.wait_for_selector(f'.kl-tree[data-selected-path="{value_path}"]')
            assert page.evaluate(RUN_IN_KERNEL, "print(ex.selected_range)") == "(1, 13, 23)\n"

            # live mode: appended frames appear in the list
            page.evaluate(RUN_IN_KERNEL, "import copy\nf = copy.copy(frames[0]); f.frame = 4\nex.append([f])")
            page.wait_for_selector('.kl-row[data-frame="4"]')
            if os.environ.get("KAFKALAB_SCREENSHOT"):       # a picture for humans reviewing the layout
                page.locator(".kl-explorer").screenshot(path=os.environ["KAFKALAB_SCREENSHOT"])
        finally:
            browser.close()


def test_saved_notebook_reopened_untrusted_shows_the_static_snapshot(lab, monkeypatch) -> None:
    """Executed elsewhere (nbclient) and saved: JupyterLab opens it untrusted, so the widget view is not
    rendered and the mimebundle's text/html stands in, with the selected field's bytes marked."""
    import nbclient
    import nbformat
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(
        "from kafkalab.notebook import explore, sample_frames\n"
        "ex = explore(sample_frames())\nex.select('acks', frame=2)\nex"))
    notebook.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbclient.NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    [output] = notebook.cells[0].outputs
    assert {"text/html", "application/vnd.jupyter.widget-view+json"} <= set(output["data"])
    nbformat.write(notebook, LAB_ROOT[lab] / "saved.ipynb")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(lab + "lab/tree/saved.ipynb")
            page.wait_for_selector(".jp-OutputArea-output mark", state="attached", timeout=60_000)
            assert page.locator(".jp-OutputArea-output mark").count() == 2
            assert "Produce v9 request" in page.locator(".jp-OutputArea-output").first.inner_text()
            assert page.locator(".kl-explorer").count() == 0
        finally:
            browser.close()
