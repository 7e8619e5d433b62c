"""The workload lab's "Real traces" group on the offline static site: the traces ship with
it (gzipped, with their licence), Pyodide fetches them from the site's own origin, and
the curve holds the engine's points as in CPython, and the replay with time its steps."""

from __future__ import annotations

import contextlib
import gzip
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from app.data.trace_lab import DEFAULT_TRACE_REQUESTS, shipped_trace, trace_path
from app.static_site.traces import TRACES_DIR
from engine.lab.traces.replay import capacities_for
from engine.lab.traces.timed import DEFAULT_STEP_MS, TimedKnobs, run_trace_timed
from engine.lab.traces.vllm.replay import HashedTrace, hit_rate_curve
from tests.app.test_browser_lab import TRACES_SOURCE_JS
from tests.site.conftest import held_server, kept_page

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    pytest.mark.skipif(trace_path("conversation") is None, reason="no Mooncake traces here"),
]

RUN_TIMEOUT_MS = 180_000
# A shipped file the app never fetches: the app's worker asks for it synchronously, which
# holds the worker's thread (as a long step in Python does) until the test lets the
# server answer (held_site).
HOLD = "traces/README.md"
HOLD_WORKER_JS = """path => {
  setTimeout(() => {
    const request = new XMLHttpRequest()
    request.open('GET', path, false)
    request.send()
  }, 0)
}"""
# Patches of knobs' values, posted to the app's worker back to back as the page sends
# them: [[the knob's title, its value], ...].
POST_PATCHES_JS = """(changes) => {
  const doc = Bokeh.documents.filter(d => d.get_model_by_name('traces-source-vllm')).at(-1)
  for (const [title, value] of changes) {
    const knob = [...doc.all_models].find(m => m.title === title)
    const change = {kind: 'ModelChanged', model: {id: knob.id}, attr: 'value', new: value}
    pyodideWorker.postMessage({type: 'patch', patch: {events: [change]}})  // Panel's page's
  }
}"""


def test_the_site_ships_the_traces_gzipped_with_their_licence(built_site: Any) -> None:
    folder = built_site.out / TRACES_DIR
    shipped = {path.name: path.stat().st_size for path in folder.iterdir()}
    assert set(shipped) >= {
        "conversation_trace.jsonl.gz",
        "synthetic_trace.jsonl.gz",
        "LICENSE-APACHE",
        "README.md",
    }
    # About 1.1 MB for both.
    assert shipped["conversation_trace.jsonl.gz"] + shipped["synthetic_trace.jsonl.gz"] > 0.8e6
    assert shipped["conversation_trace.jsonl.gz"] + shipped["synthetic_trace.jsonl.gz"] < 1.5e6
    source = trace_path("synthetic")
    assert source is not None
    unpacked = gzip.decompress((folder / "synthetic_trace.jsonl.gz").read_bytes())
    kept = source.read_bytes()
    assert unpacked == (gzip.decompress(kept) if source.suffix == ".gz" else kept)


@pytest.fixture(scope="module")
def traces_page(shared_context: Any, built_site: Any) -> Iterator[tuple[Any, Any, threading.Event]]:
    """One page of the traces' group for the two tests below, in their order (a load
    starts Pyodide again and plays the default curve of the conversation trace), served
    with HOLD held back whenever a test asks for it: (page, its run, the release)."""
    with contextlib.ExitStack() as stack:
        url, release = stack.enter_context(held_server(built_site.out, HOLD))
        page, run = stack.enter_context(kept_page(shared_context, url, "?lab=real-traces"))
        done = page.get_by_text(f"Done: the curve of {DEFAULT_TRACE_REQUESTS} requests")
        expect(done).to_be_visible(timeout=RUN_TIMEOUT_MS)
        yield page, run, release


def test_the_traces_curve_plays_in_pyodide_with_the_engines_points(
    traces_page: tuple[Any, Any, threading.Event],
) -> None:
    entries = list(shipped_trace("conversation")[:DEFAULT_TRACE_REQUESTS])
    capacities = capacities_for(entries)
    rates = [p.hit_rate for p in hit_rate_curve(HashedTrace.of(entries), capacities)]
    page, run, _ = traces_page
    expect(page.get_by_test_id("traces-source")).to_contain_text("Apache License 2.0")
    expect(page.get_by_text(f"Done: the curve of {DEFAULT_TRACE_REQUESTS} requests")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    drawn = page.evaluate(TRACES_SOURCE_JS, ["traces-source-vllm", "hit_rate"])
    assert drawn == pytest.approx(rates)
    assert page.evaluate(TRACES_SOURCE_JS, ["traces-source-vllm", "capacity"]) == capacities
    expect(page.get_by_test_id("traces-gap")).to_contain_text("cannot be compared")
    # Fetched from the site itself (kept_page checks no request left the origin).
    fetched = [r["url"] for r in run.requests if "/traces/" in r["url"]]
    assert any(url.endswith("conversation_trace.jsonl.gz") for url in fetched), fetched

    # The replay with time of a small slice plays in Pyodide too, with the engine's steps.
    timed = run_trace_timed(entries[:20], TimedKnobs(3_000_000))
    field = page.locator(".traces-requests input")
    field.fill("20")
    field.press("Enter")
    page.get_by_role("button", name="Run with time").click()
    expect(page.get_by_text("Done with time: 20 requests")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    steps = page.evaluate(TRACES_SOURCE_JS, ["timed-source-vllm-run", "step"])
    assert steps == timed.series["step"]


@contextlib.contextmanager
def worker_held(page: Any, release: threading.Event) -> Iterator[None]:
    """The app's worker's thread is held (its Python busy) while the block runs."""
    release.clear()
    worker = next(w for w in page.workers if w.url.endswith("/main.js"))
    with page.expect_request(lambda request: request.url.endswith(HOLD)):
        worker.evaluate(HOLD_WORKER_JS, HOLD)
    try:
        yield
    finally:
        release.set()


def test_knob_changes_and_a_click_made_while_python_is_busy_reach_it_in_order(
    traces_page: tuple[Any, Any, threading.Event],
) -> None:
    page, _, release = traces_page
    field = page.locator(".traces-requests input")
    run_timed = page.get_by_role("button", name="Run with time")
    # The learner sets Requests twice, then runs with time: the click waited in the page
    # behind the values (the page queues while the worker is busy), not ahead of them.
    with worker_held(page, release):
        for requests in ("12", "15"):
            field.fill(requests)
            field.press("Enter")
        run_timed.click()
    expect(page.get_by_text("Done with time: 15 requests")).to_be_visible(timeout=RUN_TIMEOUT_MS)

    # Two patches that wait in the worker together both reach Python: the second (the
    # step time, as it is) is not applied twice in place of the first (Requests 9).
    with worker_held(page, release):
        page.evaluate(
            POST_PATCHES_JS,
            [["Requests (first N; 0: all)", 9], ["Step time (ms, with time)", DEFAULT_STEP_MS]],
        )
    run_timed.click()
    expect(page.get_by_text("Done with time: 9 requests")).to_be_visible(timeout=RUN_TIMEOUT_MS)
