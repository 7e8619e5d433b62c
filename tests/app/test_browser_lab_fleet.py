"""The fleet lab in a real browser on `panel serve`: the default run's charts hold the
engine's fleet figures, the table names each router, a bad knob says why beside it, and
a small run's replica opens in the playground with its requests."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from app.data.fleet_lab import (
    DEFAULT_FLEET_CAPACITY,
    DEFAULT_FLEET_REQUESTS,
    DEFAULT_REPLICAS,
)
from app.data.trace_lab import shipped_trace, trace_path
from engine.lab.fleet.in_order import run_fleet_in_order
from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.playground import replica_requests, request_id
from engine.lab.fleet.routers import ROUTER_NAMES
from engine.lab.play import playground_code
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import format_lines
from engine.lab.play.vllm.timeline import build_timeline
from tests.app import test_browser_serve as serve
from tests.app.page_checks import wait_for_step
from tests.app.playground_checks import field
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


def test_a_small_runs_replica_opens_in_the_playground(watched: Watched, server: str) -> None:
    page: Any = watched.page
    page.goto(f"{server}?lab=fleet&engine=vllm")
    expect(page.get_by_test_id("lab-playground-reason")).to_contain_text(
        "its blocks are 512 tokens", timeout=RUN_TIMEOUT_MS
    )
    for label, value in (
        ("Requests (first N)", "16"),
        ("Replicas", "2"),
        ("Capacity each (tokens)", "25536"),
        ("Block size (tokens)", "64"),
    ):
        knob = page.get_by_label(label, exact=True)
        knob.fill(value)
        knob.press("Enter")
    page.get_by_role("button", name="Run").click()
    expect(page.get_by_text("Done: 16 requests over 2 replicas, 4 runs.")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    run = run_fleet_in_order(
        list(shipped_trace("conversation")[:16]),
        FleetKnobs(replicas=2, router="prefix-aware", capacity_tokens=25_536, block_size=64),
    )
    served = replica_requests(run, 1)
    link = page.get_by_role("link", name=f"Replica 1's {len(served)} requests in the playground")
    query = parse_qs(urlsplit(link.get_attribute("href") or "").query)
    data = playground_code.decode(query["playground"][0])
    with page.context.expect_page() as opened:
        link.click()
    playground = opened.value
    seen = Watched(playground, watched.origin)
    timeline = build_timeline(scenario_from_dict(data), "default")
    # (its views at the first step: the pool's 400 blocks and its free queue's ends)
    wait_for_step(playground, timeline, 0)
    # the replica's requests, in the order the router sent them, each then one step
    script = field(playground, "Script (one action per line)")
    expect(script).to_have_value(format_lines(data["steps"]))
    added = [a["id"] for a in data["steps"] if a["do"] == "add_request"]
    assert added == [request_id(i) for i in served]
    playground.close()
    assert not seen.errors, f"console errors in the playground: {seen.errors}"
