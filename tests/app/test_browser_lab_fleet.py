"""The fleet lab in a real browser on `panel serve`: the default run's charts hold the
engine's fleet figures, the table names each router, a bad knob says why beside it."""

from __future__ import annotations

from typing import Any

import pytest

from app.data.fleet_lab import (
    DEFAULT_FLEET_CAPACITY,
    DEFAULT_FLEET_REQUESTS,
    DEFAULT_REPLICAS,
)
from app.data.trace_lab import shipped_trace, trace_path
from engine.lab.fleet.in_order import run_fleet_in_order
from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.routers import ROUTER_NAMES
from tests.app import test_browser_serve as serve
from tests.app.test_browser_serve import Watched

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(trace_path("conversation") is None, reason="no Mooncake traces"),
]

server, playwright, browser, watched = serve.server, serve.playwright, serve.browser, serve.watched

RUN_TIMEOUT_MS = 60_000
BARS_JS = """() => {
  const doc = Bokeh.documents.filter(d => d.get_model_by_name('fleet-hits')).at(-1);
  const source = doc.get_model_by_name('fleet-hits');
  return {x: Array.from(source.data.x).map(f => f.join('/')), y: Array.from(source.data.y)};
}"""


def test_the_default_run_shows_every_routers_fleet(watched: Watched, server: str) -> None:
    page: Any = watched.page
    page.goto(f"{server}?lab=fleet&engine=vllm")
    expect(page.get_by_text("Done: 300 requests over 4 replicas, 4 runs.")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    entries = list(shipped_trace("conversation")[:DEFAULT_FLEET_REQUESTS])
    expected = [
        run_fleet_in_order(
            entries,
            FleetKnobs(
                replicas=DEFAULT_REPLICAS,
                router=router,
                capacity_tokens=DEFAULT_FLEET_CAPACITY,
                block_size=512,
            ),
        ).hit_rate
        for router in ROUTER_NAMES
    ]
    bars = page.evaluate(BARS_JS)
    assert bars["x"] == [f"{router}/vLLM" for router in ROUTER_NAMES]
    assert bars["y"] == pytest.approx(expected)
    table = page.get_by_test_id("fleet-numbers")
    expect(table).to_contain_text(f"{expected[2]:.1%}")
    expect(table.locator("tbody tr")).to_have_count(len(ROUTER_NAMES))

    replicas = page.get_by_label("Replicas", exact=True)
    replicas.fill("17")
    replicas.press("Enter")
    page.get_by_role("button", name="Run").click()
    expect(page.get_by_role("alert")).to_have_text("Replicas from 1 to 16")
