"""Every patch of the files Panel's conversion generates, in one place.

Each patch finds its anchor exactly once or stops the build (a Panel upgrade that
moves an anchor must not ship a half-patched page); tests/site/test_patches.py runs
each one against what the pinned Panel generates. What a patch inserts lives in
shims/ as real .js and .py files.
"""

from __future__ import annotations

import html as html_text
import json
import re
from pathlib import Path

from app.static_site.assets import AssetError
from app.static_site.layout import BOKEH_CDN, EARLY_DIR, LOCAL_BOKEH, LOCAL_PANEL, PANEL_CDN
from app.static_site.pins import PANEL_VERSION

SHIMS = Path(__file__).parent / "shims"

# Panel's status lines -> the page's (numbered, so the wait reads as progress).
STAGES = {
    "Loading pyodide": "Loading the Python runtime (1/3)",
    "Installing environment": "Installing packages (2/3)",
    "Executing code": "Starting the app (3/3)",
}


def shim(name: str) -> str:
    return (SHIMS / name).read_text(encoding="utf-8")


def replace_once(text: str, old: str | re.Pattern[str], new: str, where: str) -> str:
    """``old`` (a string or a pattern) found exactly once, replaced by ``new``: none or
    several (a template change in Panel) stop the build."""
    pattern = old if isinstance(old, re.Pattern) else re.compile(re.escape(old))
    text, count = pattern.subn(lambda _m: new, text)
    if count != 1:
        named = where if isinstance(old, re.Pattern) else f"{where}: {old!r}"
        raise AssetError(f"unexpected {named} ({count} found)")
    return text


def insert(text: str, anchor: str, code: str, where: str) -> str:
    """``code`` on its own line after the one ``anchor``."""
    return replace_once(text, anchor, f"{anchor}\n{code}", where)


# --- the worker (main.js) ---------------------------------------------------------------

APP_CODE_START = "runPythonAsync(`\\nimport asyncio\\n"
FUTURE_IMPORT = re.compile(r"(?<=\\n)from __future__ import [\w, ]+\\n")

# The converted worker has micropip resolve and install the requirements. Every package is
# in the lock, so shims/install_locked.js installs them without micropip.
MICROPIP_LOAD = 'await self.pyodide.loadPackage("micropip");'
MICROPIP_INSTALL = re.compile(
    r"await self\.pyodide\.runPythonAsync\(`\s*import micropip\s*"
    r"await micropip\.install\(\[[^\]]*\]\);\s*`\);"
)
START_APPLICATION = "async function startApplication() {"

# The worker applies a patch from the page through one Python global, which the next
# message can replace before the code that reads it runs (shims/apply_patch.js).
SHARED_PATCH = re.compile(
    r"self\.pyodide\.globals\.set\('patch', msg\.patch\)\s*"
    r"self\.pyodide\.runPythonAsync\(`[^`]*_convert_json_patch\(patch\)[^`]*`\)"
)


def patch_worker(js: str, locked: tuple[list[str], str] | None = None) -> str:
    """The converted worker, installing ``locked``'s names from the lock after the
    project's wheel alone (load_wheel_first), or (None: a stock app) with micropip."""
    # Convert puts Panel's preamble before the app's code, so a `from __future__` import
    # would not come first (a SyntaxError in the worker): move it up.
    futures = "".join(dict.fromkeys(FUTURE_IMPORT.findall(js)))
    if futures:
        hoisted = APP_CODE_START.replace("`", f"`{futures}", 1)
        js = replace_once(FUTURE_IMPORT.sub("", js), APP_CODE_START, hoisted, "worker JS")
    js = re.sub(r'importScripts\("[^"]*"\)', 'importScripts("./pyodide/pyodide.js")', js, count=1)
    js = replace_once(
        js,
        "await loadPyodide();",
        "await loadPyodide({env: {PANEL_CDN_ROOT: "
        f'new URL("./{LOCAL_PANEL}", self.location.href).href}}}});',
        "worker JS",
    )
    for old, new in STAGES.items():
        status = re.compile(rf"(['`]){re.escape(old)}\1")
        js = replace_once(js, status, json.dumps(new), f"worker JS: status {old!r}")
    # A failed install must be visible in the console, not only in the status line.
    js = replace_once(js, "console.log(e)", "console.error(e)", "worker JS")
    missing = "worker JS: cannot find how a patch is applied"
    js = replace_once(js, SHARED_PATCH, "applyPatch(msg.patch)", missing)
    before_start = [shim("apply_patch.js")]
    if locked is not None:
        install, wheel = locked
        js, early_js = load_wheel_first(js, wheel)
        installed = f"await installLocked({json.dumps(install)});"
        missing = "worker JS: cannot find the micropip install"
        js = replace_once(js, MICROPIP_INSTALL, installed, missing)
        before_start = [shim("install_locked.js"), *before_start, early_js]
    before_start.append(START_APPLICATION)
    js = replace_once(js, START_APPLICATION, "\n".join(before_start), "worker JS")
    # After the "app" status, before the app's code: the shim's stand-ins.
    anchor = f"msg: {json.dumps(STAGES['Executing code'])}}})"
    code = json.dumps(shim("worker_shim.py"))
    return insert(js, anchor, f"  await self.pyodide.runPythonAsync({code});", "worker JS")


# --- the page (index.html) --------------------------------------------------------------


# While the worker is busy, the page queues a property's changes but sends any other
# event (a click) at once, ahead of them: here every event waits, in order
# (shims/queue_in_order.js).
QUEUED_CHANGE = re.compile(
    r"\} else if \(pyodideWorker\.busy && event\.model && event\.attr\) \{"
    r".*?pyodideWorker\.queue = events\s*return\s*\}",
    re.S,
)
QUEUED_IN_ORDER = (
    "} else if (pyodideWorker.busy) {\n"
    "  pyodideWorker.queue = queuedInOrder(pyodideWorker.queue, event)\n"
    "  return\n"
    "}"
)
SEND_CHANGE = "function send_change(jsdoc, event) {"


# The worker early_worker.js started, on its own <script> tag (no page-wide global).
EARLY_WORKER = "document.querySelector('script[data-worker]').worker"
# Bokeh's and Panel's scripts in the converted page's <head>, each parser-blocking.
SET_LOG_LEVEL = '<script type="text/javascript">\n  Bokeh.set_log_level("info");\n</script>'
HEAD_SCRIPT = re.compile(r'<script type="text/javascript" src="([^"]+)"></script>')


def patch_html(html: str, worker_name: str, early: bool = True) -> str:
    """The converted page on the site's own copies, each event waiting in order while
    the worker is busy; and unless a stock app (not ``early``), the worker started first
    and each address's early page laid out before Bokeh (early_page_module)."""
    # Bokeh's and Panel's CDN addresses -> the site's own copies.
    html = html.replace(BOKEH_CDN, f"./{LOCAL_BOKEH}").replace(PANEL_CDN, f"./{LOCAL_PANEL}")
    missing = "converted HTML: cannot find how a change waits"
    html = replace_once(html, QUEUED_CHANGE, QUEUED_IN_ORDER, missing)
    # Inside send_change, its one caller: a function of the page's script's top level
    # would be a page-wide global.
    html = insert(html, SEND_CHANGE, shim("queue_in_order.js"), "converted HTML")
    # Without an icon link the browser asks for /favicon.ico, a 404.
    icon = f"./{LOCAL_PANEL}{PANEL_VERSION}/dist/images/favicon.ico"
    head = [f'<link rel="icon" href="{icon}">']
    if early:
        script = html_text.escape(f"./{worker_name}.js")
        early_worker = f'<script data-worker="{script}">\n{shim("early_worker.js")}</script>'
        head = [early_page_module(), early_worker, *head]
        created = f'new Worker("./{worker_name}.js")'
        html = replace_once(html, created, EARLY_WORKER, "converted HTML")
        # It runs as the page is parsed, before the deferred Bokeh; "info" is BokehJS's
        # default.
        html = replace_once(html, SET_LOG_LEVEL, "", "converted HTML")
        html, count = HEAD_SCRIPT.subn(
            r'<script type="text/javascript" src="\1" defer></script>', html
        )
        if count < 2:
            raise AssetError(f"unexpected converted HTML: {count} script tags to defer")
    return insert(html, "</title>", "\n".join(head), "converted HTML")


def early_page_module() -> str:
    """Each address fetches its early page (app/page/early_page.js) and lays it out at
    once: the module starts first, and Bokeh's and Panel's 3 MB of JS no longer hold
    the page's first paint (they run, in order, once the page is parsed). The app's
    worker fills a playground link's page (load_wheel_first)."""
    from app.data import timelines, url

    config = [
        sorted(name for name in url.early_pages() if name != url.START_PAGE),
        url.START_PAGE,
        timelines.default_scenario(),
        url.browser_names(),
        url.PLAYGROUND,
        EARLY_MESSAGE,
    ]
    data = html_text.escape(json.dumps([config, EARLY_DIR]))
    start_js = shim("early_page_start.js")
    return f'<script type="module" async data-early-pages="{data}">\n{start_js}</script>'


# The type of the messages between a playground link's early page and the app's worker.
EARLY_MESSAGE = "pcl-early"
# The workload lab's side worker (app/data/side_runs.py), written beside the app's worker.
SIDE_WORKER = "side_worker.js"


def load_wheel_first(js: str, wheel: str) -> tuple[str, str]:
    """The worker names the project's `wheel`, which two things load alone: for a
    playground link, the worker itself once Pyodide is up, where micropip loaded
    (shims/early_in_worker.js, with install_locked.js's installLocked), to answer the
    link's early page before it installs the app; and the lab's side worker
    (shims/side_worker.js; app/data/side_runs.py), both told it by `self.pclWheel`. Gives
    the worker and the code for before its startApplication."""
    names = json.dumps({"wheel": wheel, "early": EARLY_MESSAGE, "side": f"./{SIDE_WORKER}"})
    code = "await startEarlyPlayground();"
    js = replace_once(js, MICROPIP_LOAD, code, "worker JS: cannot find the micropip load")
    return js, f"self.pclWheel = {names};\n{shim('early_in_worker.js')}"
