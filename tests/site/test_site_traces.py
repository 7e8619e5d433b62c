"""The workload lab's "Real traces" group on the offline static site: the traces ship with
it (gzipped, with their licence), Pyodide fetches them from the site's own origin, and
the curve holds the engine's points as in CPython, and the replay with time its steps."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from typing import Any

import pytest

from app.data.trace_lab import DEFAULT_TRACE_REQUESTS, shipped_trace, trace_path
from app.static_site.traces import TRACES_DIR
from engine.lab.trace_replay import HashedTrace, capacities_for, hit_rate_curve
from engine.lab.trace_timed import TimedKnobs, run_trace_timed
from tests.app.test_browser_lab import TRACES_SOURCE_JS

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [
    pytest.mark.site,
    pytest.mark.browser,
    pytest.mark.skipif(trace_path("conversation") is None, reason="no Mooncake traces here"),
]

RUN_TIMEOUT_MS = 180_000


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


def test_the_traces_curve_plays_in_pyodide_with_the_engines_points(
    site_page: Callable[..., tuple[Any, Any]],
) -> None:
    entries = list(shipped_trace("conversation")[:DEFAULT_TRACE_REQUESTS])
    capacities = capacities_for(entries)
    rates = [p.hit_rate for p in hit_rate_curve(HashedTrace.of(entries), capacities)]
    page, run = site_page("?lab=real-traces")
    expect(page.get_by_test_id("traces-source")).to_contain_text("Apache License 2.0")
    expect(page.get_by_text(f"Done: the curve of {DEFAULT_TRACE_REQUESTS} requests")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    drawn = page.evaluate(TRACES_SOURCE_JS, ["traces-source-vllm", "hit_rate"])
    assert drawn == pytest.approx(rates)
    assert page.evaluate(TRACES_SOURCE_JS, ["traces-source-vllm", "capacity"]) == capacities
    expect(page.get_by_test_id("traces-gap")).to_contain_text("cannot be compared")
    # Fetched from the site itself (site_page checks no request left the origin).
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
