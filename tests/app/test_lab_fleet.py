"""The fleet lab (`?lab=fleet`), without a browser: the page's figures are the engine's
fleet runs, a bad knob gets its message and runs nothing, Stop stops, and the picker and
the address open it."""

from __future__ import annotations

import asyncio

import pytest

from app.data.fleet_lab import FleetLabKnobs, FleetLabRun, fleet_problems
from app.data.lab_presets import FLEET_PRESET
from app.data.trace_lab import shipped_trace, trace_path
from app.views.fleet_lab import FleetLabView
from app.views.lab import open_lab
from app.views.lab_controls import lab_picker_options
from engine.lab.fleet.in_order import run_fleet_in_order
from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.playground import replica_playground_code
from engine.lab.fleet.routers import ROUTER_NAMES
from engine.lab.fleet.timed import TimedFleet
from tests.app.conftest import parse

pytestmark = pytest.mark.skipif(
    trace_path("conversation") is None, reason="the Mooncake traces are not here"
)

REQUESTS = 120


def ran(engine: str, requests: int, replicas: int, capacity: int, **more: object) -> FleetLabView:
    """The page after a run over the conversation trace with these knobs."""
    view = FleetLabView(engine=engine)
    view.knobs["trace"].value = "conversation"
    view.knobs["requests"].value = requests
    view.knobs["replicas"].value = replicas
    view.knobs["capacity"].value = capacity
    for knob, value in more.items():
        view.knobs[knob].value = value
    asyncio.run(view.start())
    return view


def test_the_page_shows_each_routers_fleet_run() -> None:
    view = ran("both", REQUESTS, 4, 600_000)
    assert "Done: 120 requests over 4 replicas, 8 runs." in view.status.object
    entries = list(shipped_trace("conversation")[:REQUESTS])
    expected = {
        router: run_fleet_in_order(
            entries,
            FleetKnobs(replicas=4, router=router, capacity_tokens=600_000, block_size=512),
        ).hit_rate
        for router in ROUTER_NAMES
    }
    bars = view.charts.hit_source.data
    shown = dict(zip(bars["x"], bars["y"], strict=True))
    for router in ROUTER_NAMES:
        assert shown[router, "vLLM"] == pytest.approx(expected[router])
    # a row per engine and router, in the table too
    rows = [e for e in parse(view.numbers.object).iter() if e.tag == "tr"][1:]
    assert len(rows) == 8
    cells = [e.text for e in rows[0].iter() if e.tag == "td"]
    assert cells[:3] == ["vLLM", "round-robin", f"{expected['round-robin']:.1%}"]
    # each replica's load for the router picked, as the router saw it
    loads = view.charts.load_source.data
    assert loads["ys"] == view.runs["vllm", "prefix-aware"].series["load"]
    assert len(loads["ys"]) == 4 and loads["replica"][3] == "Replica 3"
    # a legend under the chart names each replica's colour, as the playground's list names it
    fig = view.charts.load_figure
    (legend,) = fig.legend
    (item,) = legend.items
    assert legend in fig.below and legend.visible
    assert not FleetLabView(engine="vLLM").charts.load_legend.visible  # no run, no empty box
    assert item.label.field == "replica" and item.renderers == fig.renderers
    view.knobs["load_router"].value = "cache-aware"
    assert view.charts.load_source.data["ys"] == view.runs["vllm", "cache-aware"].series["load"]


def test_a_bad_knob_gets_its_message_and_runs_nothing() -> None:
    view = FleetLabView()
    view.knobs["requests"].value = REQUESTS
    view.knobs["replicas"].value = 17
    asyncio.run(view.start())
    assert "Replicas from 1 to 16" in view.knob_errors["replicas"].object
    assert view.knob_errors["replicas"].visible and not view.runs
    assert "Done" not in view.status.object


def knobs(
    requests: int, replicas: int, capacity: int, load_weight: float, event_delay: int
) -> FleetLabKnobs:
    """The fleet page's knobs, in order (a trace's block size, without time)."""
    return FleetLabKnobs(
        requests=requests,
        replicas=replicas,
        capacity=capacity,
        block_size=512,
        load_weight=load_weight,
        event_delay=event_delay,
        timed=False,
    )


def test_knob_messages() -> None:
    entries = shipped_trace("conversation")[:500]
    found = fleet_problems(knobs(0, 0, 100, -1.0, -1), entries)
    assert set(found) == {"requests", "replicas", "capacity", "load_weight", "event_delay"}
    assert fleet_problems(knobs(300, 4, 1_000_000, 1.0, 0), entries) == {}


def test_stop_stops_the_run() -> None:
    entries = list(shipped_trace("conversation")[:REQUESTS])
    run = FleetLabRun(entries, ("vllm",), knobs(REQUESTS, 2, 600_000, 1.0, 0))
    seen: list[float] = []

    def stop_soon(share: float) -> None:
        seen.append(share)
        if len(seen) == 3:
            run.stop()

    assert asyncio.run(run.play(stop_soon)) is None
    assert len(seen) == 3 and seen[-1] < 0.5


def test_the_picker_and_the_address_open_the_fleet() -> None:
    assert lab_picker_options()[-1] == FLEET_PRESET
    assert isinstance(open_lab(FLEET_PRESET, "both"), FleetLabView)


def test_with_time_the_page_shows_the_timed_fleets() -> None:
    view = ran("vLLM", 40, 2, 300_000, timed=True)
    assert "Done: 40 requests over 2 replicas, 4 runs." in view.status.object
    entries = list(shipped_trace("conversation")[:40])
    knobs = FleetKnobs(replicas=2, router="least-loaded", capacity_tokens=300_000, block_size=512)
    expected = TimedFleet(entries, knobs).run()
    assert view.runs["vllm", "least-loaded"].hit_rate == expected.hit_rate
    assert view.runs["vllm", "least-loaded"].series["load"] == expected.series["load"]
    assert view.charts.load_figure.xaxis[0].axis_label == "time (ms)"
    # the replay with time's own limits, beside the knob
    view.knobs["requests"].value = 2_000
    asyncio.run(view.start())
    assert "more than 5,000,000" in view.knob_errors["requests"].object


def test_a_small_run_opens_each_replica_in_the_playground() -> None:
    view = ran("both", 16, 2, 25_536, block_size=64)
    entries = list(shipped_trace("conversation")[:16])
    for router in ("prefix-aware", "round-robin"):
        view.knobs["load_router"].value = router
        run = view.runs["vllm", router]
        links = parse(view.playground.object)
        assert f"{router}'s replicas in the playground (vLLM)" in links.text
        hrefs = [e.attrs["href"] for e in links.iter() if e.tag == "a"]
        assert hrefs == [
            "?scenario=playground&playground="
            + replica_playground_code(entries, run, replica)
            + "&mode=default"
            for replica in range(2)
        ]
    # too large: one line says why, and no link
    view.knobs["block_size"].value = 512
    view.knobs["capacity"].value = 1_000_000
    asyncio.run(view.start())
    assert "its blocks are 512 tokens" in view.playground.object
    assert "<a " not in view.playground.object
    view.knobs["timed"].value = True
    asyncio.run(view.start())
    assert "with time the requests of a replica overlap" in view.playground.object
