"""Fixtures: build the static site, serve it on 127.0.0.1, drive it in Debian's Chromium.

Environment overrides (all optional):
    PCL_SITE_REUSE=1      reuse an existing site/ instead of running build.py
    PCL_SITE_APP, PCL_SITE_DIR   build another app (e.g. a stand-in)
    PCL_SITE_NO_PROJECT=1 ship no project wheel (stock Panel app)
    PCL_SITE_LABEL        name of the artifacts written to test-artifacts/
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from app.static_site import layout
from app.static_site.serve import SiteHandler, make_server
from tests.app.browser import CHROMIUM as BROWSER
from tests.app.browser import CHROMIUM_ARGS

ROOT = layout.ROOT

CHROMIUM = Path(BROWSER)
CHROMIUM_FLAGS = [
    *CHROMIUM_ARGS,
    # Any host but the test server fails to resolve: a CDN request cannot succeed silently.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]
BUILD_TIMEOUT_S = 900
INTERACTIVE_TIMEOUT_MS = 90_000
ARTIFACTS = ROOT / "test-artifacts"

# Installed before any page script: records each loading-status text with a timestamp,
# and when the early page first shows.
RECORDER_JS = """
(() => {
  const t0 = performance.timeOrigin;
  window.__siteRecorder = {status: [], visible: null, early: null, interactive: null};
  const seen = () => {
    const msg = document.querySelector('.pn-loading-msg');
    const text = msg ? msg.textContent : null;
    const log = window.__siteRecorder.status;
    if (text && (!log.length || log[log.length - 1].text !== text)) {
      log.push({text, t_ms: performance.now()});
    }
    const roots = document.querySelectorAll('[data-root-id]');
    if (window.__siteRecorder.visible === null && [...roots].some(r => r.childElementCount > 0)) {
      window.__siteRecorder.visible = performance.now();
    }
    if (window.__siteRecorder.early === null && document.body &&
        document.body.classList.contains('pcl-early')) {
      window.__siteRecorder.early = performance.now();
    }
    if (window.__siteRecorder.interactive === null && document.body &&
        !document.body.classList.contains('pn-loading') && document.readyState !== 'loading') {
      window.__siteRecorder.interactive = performance.now();
    }
  };
  new MutationObserver(seen).observe(document, {
    subtree: true, childList: true, attributes: true, characterData: true,
  });
})();
"""


@dataclass
class SiteTarget:
    app: Path
    project: Path | None
    out: Path
    label: str


@dataclass
class PageRun:
    """What one page load did: requests, console errors, status messages, timings."""

    origin: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    status: list[dict[str, Any]] = field(default_factory=list)
    visible_ms: float | None = None
    early_ms: float | None = None  # the early page's steps work (app/page/early_page.js)
    interactive_ms: float | None = None

    @property
    def foreign(self) -> list[str]:
        return [r["url"] for r in self.requests if not self._local(r["url"])]

    def _local(self, url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme in ("data", "blob") or f"{parts.scheme}://{parts.netloc}" == self.origin

    @property
    def bytes(self) -> int:
        return sum(r["bytes"] for r in self.requests)

    @property
    def bad_status(self) -> list[str]:
        return [f"{r['status']} {r['url']}" for r in self.requests if r["status"] >= 400]

    def summary(self) -> dict[str, Any]:
        return {
            "visible_ms": self.visible_ms,
            "early_ms": self.early_ms,
            "interactive_ms": self.interactive_ms,
            "requests": len(self.requests),
            "bytes": self.bytes,
            "foreign": self.foreign,
            "failed": self.failed,
            "errors": self.errors,
            "status": self.status,
        }


def site_target() -> SiteTarget:
    env = os.environ
    app = Path(env.get("PCL_SITE_APP") or ROOT / layout.APP_SCRIPT)
    project = None if env.get("PCL_SITE_NO_PROJECT") else ROOT
    out = Path(env.get("PCL_SITE_DIR") or ROOT / layout.SITE_DIR)
    return SiteTarget(app, project, out, env.get("PCL_SITE_LABEL", "site"))


@pytest.fixture(scope="session")
def built_site() -> SiteTarget:
    """Run build.py (a subprocess, as a user would), or reuse the site when asked to."""
    target = site_target()
    if os.environ.get("PCL_SITE_REUSE") and (target.out / layout.INDEX_HTML).exists():
        return target
    if not target.app.exists():
        pytest.skip(f"{target.app} does not exist yet")
    cmd = [
        sys.executable,
        str(ROOT / "build.py"),
        "build",
        "--app",
        str(target.app),
        "--out",
        str(target.out),
    ]
    cmd += ["--no-project"] if target.project is None else []
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert proc.returncode == 0, f"build.py failed:\n{proc.stdout}\n{proc.stderr}"
    write_artifact(
        target.label, "build", {"seconds": time.perf_counter() - started, "stdout": proc.stdout}
    )
    return target


@pytest.fixture(scope="session")
def site_url(built_site: SiteTarget) -> Iterator[str]:
    server = make_server(built_site.out, 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class HeldFile(SiteHandler):
    """Serves the site, but holds back one file until the test releases it (and, if
    asked, answers 404 for every path under `missing`, as a host that lost them)."""

    held = ""
    release = threading.Event()
    missing = ""

    def send_head(self) -> object:
        path = self.path.split("?")[0]
        if self.missing and path.startswith(self.missing):
            self.send_error(404)
            return None
        if self.held and path.endswith(self.held):
            self.release.wait(timeout=INTERACTIVE_TIMEOUT_MS / 1000)
        return super().send_head()


@contextlib.contextmanager
def held_server(out: Path, held: str, missing: str = "") -> Iterator[tuple[str, threading.Event]]:
    """(url, release): the site in ``out`` served with ``held`` held back until
    ``release`` is set (see HeldFile); released and stopped at the end."""
    release = threading.Event()
    handler = type("Held", (HeldFile,), {"held": held, "release": release, "missing": missing})
    server = make_server(out, 0, handler=handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", release
    finally:
        release.set()
        server.shutdown()
        server.server_close()


class HeldOrigin:
    """One held server for a module's held pages (see HeldFile), each page holding its own
    file: one origin, so the module's context (shared_context) finds Pyodide and the
    wheels in its HTTP cache from one test to the next (a page asks for each file again, the site
    says `no-cache`: the held file is asked for, and held, all the same)."""

    def __init__(self, out: Path) -> None:
        attributes = {"held": "", "release": threading.Event(), "missing": ""}
        self.handler: type[HeldFile] = type("Held", (HeldFile,), attributes)
        self.server = make_server(out, 0, handler=self.handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def hold(self, held: str, missing: str = "") -> tuple[str, threading.Event]:
        """(url, release) for a new page: ``held`` held back until ``release`` is set."""
        self.free()
        release = threading.Event()
        self.handler.held, self.handler.missing, self.handler.release = held, missing, release
        return self.url, release

    def free(self) -> None:
        """Let the last page's held file go; hold nothing until the next `hold`."""
        self.handler.release.set()
        self.handler.held, self.handler.missing = "", ""


@pytest.fixture(scope="module")
def held_origin(built_site: SiteTarget) -> Iterator[HeldOrigin]:
    origin = HeldOrigin(built_site.out)
    threading.Thread(target=origin.server.serve_forever, daemon=True).start()
    try:
        yield origin
    finally:
        origin.free()
        origin.server.shutdown()
        origin.server.server_close()


@pytest.fixture
def held_site(built_site: SiteTarget) -> Iterator[Callable[..., tuple[str, threading.Event]]]:
    """held_site(file, missing="") -> (url, release): the site served with `file` held
    back, so the page stays in its pre-Python phase until the test sets `release`."""
    with contextlib.ExitStack() as servers:

        def _serve(held: str, missing: str = "") -> tuple[str, threading.Event]:
            return servers.enter_context(held_server(built_site.out, held, missing))

        yield _serve


# The browser and its context last a module, not the session: a sync Playwright that stays
# open makes asyncio.run() fail in the tests that run after it in the same process, and
# run.sh runs modules side by side in two processes (pytest-xdist, --dist loadfile).
@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("Debian's Chromium is missing: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # Playwright gives the browser a new temporary --user-data-dir of its own.
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, timeout=60_000
        )
        try:
            yield browser
        finally:
            browser.close()


def record(page: Any, run: PageRun) -> Callable[[], None]:
    """Attach recorders for one load; returns a function that detaches them."""

    def on_finished(request: Any) -> None:
        response = request.response()
        sizes = request.sizes()
        run.requests.append(
            {
                "url": request.url,
                "status": response.status if response else 0,
                "bytes": sizes["responseBodySize"] + sizes["responseHeadersSize"],
            }
        )

    def on_failed(request: Any) -> None:
        # A download the page itself cancelled (the learner followed a link while the
        # runtime was still loading) is not a failure of the site: a missing or
        # refused file fails otherwise (a 404 status, ERR_FAILED, ERR_CONNECTION_*).
        if request.failure != "net::ERR_ABORTED":
            run.failed.append(f"{request.url} ({request.failure})")
        run.requests.append({"url": request.url, "status": 0, "bytes": 0})

    def on_console(msg: Any) -> None:
        run.console.append(f"{msg.type}: {msg.text}")
        if msg.type == "error":
            run.errors.append(msg.text)

    def on_error(exc: Any) -> None:
        run.errors.append(f"pageerror: {exc}")

    hooks = [
        (page.context, "requestfinished", on_finished),
        (page.context, "requestfailed", on_failed),
        (page, "console", on_console),
        (page, "pageerror", on_error),
    ]
    for target, event, hook in hooks:
        target.on(event, hook)
    return lambda: [target.remove_listener(event, hook) for target, event, hook in hooks] and None


def wait_interactive(page: Any, run: PageRun, timeout_ms: int = INTERACTIVE_TIMEOUT_MS) -> None:
    """Wait until Panel removes the loading class from <body> and the early page has
    handed over to the live one (app/page/early_page.js); never unbounded."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(
            "() => document.body && !document.body.classList.contains('pn-loading')"
            " && !document.querySelector('.pcl-early-page')",
            timeout=timeout_ms,
            polling=50,
        )
    except PlaywrightTimeout:
        status = page.evaluate("() => window.__siteRecorder && window.__siteRecorder.status", None)
        pytest.fail(
            f"not interactive after {timeout_ms} ms; status {status}; "
            f"errors {run.errors}; failed {run.failed}"
        )
    page.wait_for_load_state("load", timeout=timeout_ms)
    probe = page.evaluate("() => window.__siteRecorder")
    run.status = probe["status"]
    run.visible_ms = probe["visible"]
    run.early_ms = probe["early"]
    run.interactive_ms = probe["interactive"]


@pytest.fixture
def open_app(chromium: Any, site_url: str) -> Iterator[Callable[..., tuple[Any, PageRun]]]:
    """open_app(query="", page=None, device=None) -> (page, run): a fresh context (cold
    cache; ``device``: Playwright's context options, e.g. a phone's) unless a page is
    passed, in which case it is reloaded in its own context (warm cache)."""
    contexts: list[Any] = []
    detach: dict[int, Callable[[], None]] = {}

    def _open(
        query: str = "", page: Any = None, device: dict[str, Any] | None = None
    ) -> tuple[Any, PageRun]:
        if page is None:
            context = chromium.new_context(**(device or {}))
            context.set_default_timeout(30_000)
            contexts.append(context)
            context.add_init_script(RECORDER_JS)
            page = context.new_page()
        else:
            # Stylesheets fetched after the app turned interactive would be aborted by the
            # reload and counted as this load's failures: let them finish first.
            page.wait_for_load_state("networkidle", timeout=30_000)
            detach.pop(id(page))()  # the previous load's run stops recording here
        run = PageRun(origin=site_url)
        detach[id(page)] = record(page, run)
        page.goto(f"{site_url}/{query}", wait_until="commit", timeout=30_000)
        wait_interactive(page, run)
        return page, run

    yield _open
    for context in contexts:
        context.close()


@pytest.fixture
def save_artifact(built_site: SiteTarget) -> Callable[[str, Any], Path]:
    """save_artifact(name, data) writes test-artifacts/<label>-<name>.json."""
    return lambda name, data: write_artifact(built_site.label, name, data)


def write_artifact(label: str, name: str, data: Any) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{label}-{name}.json"
    path.write_text(json.dumps(data, indent=2))
    return path


@pytest.fixture(scope="module")
def shared_context(chromium: Any) -> Iterator[Any]:
    """One context for a module's behaviour tests: its HTTP cache makes later loads warm."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(30_000)
    context.add_init_script(RECORDER_JS)
    try:
        yield context
    finally:
        context.close()


def assert_clean(run: PageRun) -> None:
    assert run.foreign == [], f"requests left the origin: {run.foreign}"
    assert run.failed == [], f"failed requests: {run.failed}"
    assert run.bad_status == [], f"HTTP errors: {run.bad_status}"
    assert run.errors == [], f"console errors: {run.errors}"


def open_page(
    context: Any, site_url: str, query: str = "", viewport: tuple[int, int] | None = None
) -> tuple[Any, PageRun, Callable[[], None]]:
    """A new page of ``context`` at ``query``, interactive: (page, run, detach)."""
    page = context.new_page()
    if viewport:
        page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    run = PageRun(origin=site_url)
    detach = record(page, run)
    page.goto(f"{site_url}/{query}", wait_until="commit", timeout=30_000)
    wait_interactive(page, run)
    return page, run, detach


@pytest.fixture
def site_page(
    shared_context: Any,
    site_url: str,
    request: pytest.FixtureRequest,
    save_artifact: Callable[[str, Any], Path],
) -> Iterator[Callable[..., Any]]:
    """site_page(query="", viewport=None) -> (page, run): a new page in the shared context,
    interactive. When the test ends, its status messages are saved and it must be clean."""
    opened: list[tuple[str, Any, PageRun, Callable[[], None]]] = []

    def _open(query: str = "", viewport: tuple[int, int] | None = None) -> tuple[Any, PageRun]:
        page, run, detach = open_page(shared_context, site_url, query, viewport)
        opened.append((query, page, run, detach))
        return page, run

    yield _open
    for _, page, _, detach in opened:
        detach()
        page.close()
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in request.node.name)
    save_artifact(f"page-{name}", [{"query": q, **run.summary()} for q, _, run, _ in opened])
    for _, _, run, _ in opened:
        assert_clean(run)


@contextlib.contextmanager
def kept_page(context: Any, site_url: str, query: str) -> Iterator[tuple[Any, PageRun]]:
    """A page at ``query`` kept open for several tests: closed at the end, and clean."""
    page, run, detach = open_page(context, site_url, query)
    yield page, run
    detach()
    page.close()
    assert_clean(run)
