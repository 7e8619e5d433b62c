"""Every patch of Panel's generated files, run against what the pinned Panel generates.

No built site needed: Panel converts a tiny app here (seconds), and each patch must
find its anchor in that output and leave valid JavaScript behind.
"""

from __future__ import annotations

import html as html_text
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.data import url
from app.static_site.assets import AssetError
from app.static_site.layout import BOKEH_CDN, PANEL_CDN
from app.static_site.patches import (
    EARLY_MESSAGE,
    EARLY_WORKER,
    SEND_CHANGE,
    SET_LOG_LEVEL,
    SIDE_WORKER,
    STAGES,
    patch_html,
    patch_worker,
    shim,
)
from app.static_site.pins import PANEL_VERSION

TINY_APP = """from __future__ import annotations

import panel as pn

pn.pane.HTML("<b>tiny</b>").servable()
"""
NODE = shutil.which("node")
WHEEL = "./pyodide/prefix_cache_lab-0.1.0-py3-none-any.whl"


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(page HTML, worker JS) as the pinned Panel converts a tiny app."""
    from panel.io.convert import script_to_html

    app = tmp_path_factory.mktemp("tiny") / "main.py"
    app.write_text(TINY_APP)
    page, worker = script_to_html(
        str(app),
        requirements=["param"],
        runtime="pyodide-worker",
        prerender=True,
        panel_version=PANEL_VERSION,
    )
    assert worker is not None
    return page, worker


def check_js(code: str, tmp_path: Path, name: str) -> None:
    if NODE is None:
        pytest.skip("node is not installed")
    path = tmp_path / name
    path.write_text(code)
    proc = subprocess.run([NODE, "--check", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_worker_installs_from_the_lock_and_runs_the_shim(
    converted: tuple[str, str], tmp_path: Path
) -> None:
    worker = patch_worker(converted[1], (["bokeh", "panel", "param"], WHEEL))
    assert "micropip.install" not in worker
    assert 'loadPackage("micropip")' not in worker
    assert 'await installLocked(["bokeh", "panel", "param"]);' in worker
    assert 'importScripts("./pyodide/pyodide.js")' in worker
    assert all(json.dumps(stage) in worker for stage in STAGES.values())
    assert json.dumps(shim("worker_shim.py")) in worker
    assert "console.error(e)" in worker
    # The app's `from __future__` import comes first in its code, or Python refuses it.
    assert "runPythonAsync(`from __future__ import annotations\\n" in worker
    check_js(worker, tmp_path, "worker.js")


def test_the_worker_keeps_micropip_without_the_direct_install(
    converted: tuple[str, str], tmp_path: Path
) -> None:
    worker = patch_worker(converted[1])
    assert "micropip.install" in worker
    assert "installLocked" not in worker
    check_js(worker, tmp_path, "worker.js")


def test_the_page_starts_the_worker_early_from_its_own_copy(converted: tuple[str, str]) -> None:
    page = patch_html(converted[0], "main")
    assert '<script data-worker="./main.js">' in page
    assert shim("early_worker.js") in page
    assert EARLY_WORKER in page
    assert 'new Worker("./main.js")' not in page
    assert BOKEH_CDN not in page and PANEL_CDN not in page
    assert f"./cdn/panel/{PANEL_VERSION}/dist/images/favicon.ico" in page


def test_a_stock_app_starts_panels_own_worker(converted: tuple[str, str]) -> None:
    page = patch_html(converted[0], "main", early=False)
    assert 'new Worker("./main.js")' in page
    assert "data-worker" not in page


def test_the_page_lays_out_its_early_page_before_bokeh(converted: tuple[str, str]) -> None:
    page = patch_html(converted[0], "main")
    module = page.index('<script type="module" async data-early-pages=')
    assert shim("early_page_start.js") in page
    data = re.search(r'<script type="module" async data-early-pages="([^"]*)">', page)
    assert data is not None
    (names, start, *_rest), folder = json.loads(html_text.unescape(data.group(1)))
    assert (start, folder) == (url.START_PAGE, "early")
    assert names == sorted(set(url.early_pages()) - {url.START_PAGE})
    assert "eviction-order" in names and "eviction-order-embed" in names
    # Bokeh's and Panel's scripts run after the page is parsed, after the early page's.
    scripts = re.findall(r'<script type="text/javascript" src="[^"]+"( defer)?>', page)
    assert scripts and all(scripts)
    assert module < page.index("bokeh-")
    assert "Bokeh.set_log_level" not in page


def test_an_anchor_panel_moved_stops_the_build(converted: tuple[str, str]) -> None:
    with pytest.raises(AssetError, match="unexpected worker JS"):
        patch_worker(converted[1].replace("await loadPyodide();", "await loadPyodide({});"))
    with pytest.raises(AssetError, match="unexpected worker JS: cannot find how a patch"):
        patch_worker(converted[1].replace("globals.set('patch', msg.patch)", ""))
    with pytest.raises(AssetError, match="unexpected converted HTML"):
        patch_html(converted[0].replace(SET_LOG_LEVEL, ""), "main")
    with pytest.raises(AssetError, match="unexpected converted HTML: cannot find how a change"):
        patch_html(converted[0].replace("event.model && event.attr", "event.attr"), "main")


def test_each_patch_from_the_page_reaches_python_as_its_own(
    converted: tuple[str, str], tmp_path: Path
) -> None:
    """Not through one global that the next message replaces before Python reads it."""
    assert "self.pyodide.globals.set('patch', msg.patch)" in converted[1]
    worker = patch_worker(converted[1], (["panel"], WHEEL))
    assert "globals.set('patch'" not in worker
    assert "applyPatch(msg.patch)\n    self.postMessage({type: 'idle'})" in worker
    assert worker.index(shim("apply_patch.js")) < worker.index("async function startApplication")
    check_js(worker, tmp_path, "worker.js")


@pytest.mark.parametrize("early", [True, False])
def test_every_event_from_the_page_waits_in_order_while_the_worker_is_busy(
    converted: tuple[str, str], tmp_path: Path, early: bool
) -> None:
    page = patch_html(converted[0], "main", early=early)
    assert "pyodideWorker.queue = queuedInOrder(pyodideWorker.queue, event)" in page
    # Inside send_change: not a global of the page.
    assert f"{SEND_CHANGE}\n{shim('queue_in_order.js')}" in page
    if NODE is None:
        pytest.skip("node is not installed")
    # A click waits behind the knob changes before it; a knob's newer value replaces an
    # older one only when no click came between them.
    script = tmp_path / "queue.js"
    script.write_text(
        shim("queue_in_order.js")
        + """
const a = {}, b = {}
const change = (model, value) => ({ model, attr: 'value', value })
let queue = []
for (const event of [change(a, 1), change(b, 1), change(a, 2), { click: 1 }, change(a, 3),
  change(b, 2), change(a, 4), { click: 2 }]) { queue = queuedInOrder(queue, event) }
console.log(JSON.stringify(queue.map((e) => e.click ? `click ${e.click}` :
  `${e.model === a ? 'a' : 'b'}=${e.value}`)))
"""
    )
    proc = subprocess.run([NODE, str(script)], capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == ["b=1", "a=2", "click 1", "b=2", "a=4", "click 2"]


def test_a_playground_link_is_answered_early_by_the_apps_worker(
    converted: tuple[str, str], tmp_path: Path
) -> None:
    worker = patch_worker(converted[1], (["panel"], WHEEL))
    assert shim("early_in_worker.js") in worker
    named = re.search(r"self\.pclWheel = (\{.*\});", worker)
    assert named is not None
    names = json.loads(named.group(1))
    assert (names["wheel"], names["early"]) == (WHEEL, EARLY_MESSAGE)
    # At the worker's start, it hears the page's requests; once Pyodide is up, before the
    # installs, it loads the wheel alone and answers them, then installs the app's packages.
    call = "await startEarlyPlayground();"
    assert worker.index(named.group(0)) < worker.index("async function startApplication()")
    assert worker.index('console.log("Loaded pyodide!");') < worker.index(call)
    assert worker.index(call) < worker.index('await installLocked(["panel"]);')
    check_js(worker, tmp_path, "worker.js")

    # The page names the playground's early page and the messages' type.
    page = patch_html(converted[0], "main")
    data = re.search(r'<script type="module" async data-early-pages="([^"]*)">', page)
    assert data is not None
    (shipped, *_rest, playground, kind), _folder = json.loads(html_text.unescape(data.group(1)))
    assert (playground, kind) == (url.PLAYGROUND, EARLY_MESSAGE)
    assert url.PLAYGROUND not in shipped


def test_the_apps_worker_names_the_labs_side_worker_and_the_wheel(
    converted: tuple[str, str], tmp_path: Path
) -> None:
    worker = patch_worker(converted[1], (["panel"], WHEEL))
    named = re.search(r"self\.pclWheel = (\{.*\});", worker)
    assert named is not None
    expected = {"wheel": WHEEL, "early": EARLY_MESSAGE, "side": f"./{SIDE_WORKER}"}
    assert json.loads(named.group(1)) == expected
    # Before the app starts, which may start the side worker.
    assert worker.index(named.group(0)) < worker.index('await installLocked(["panel"]);')
    check_js(worker, tmp_path, "worker.js")
    check_js(shim(SIDE_WORKER), tmp_path, SIDE_WORKER)
