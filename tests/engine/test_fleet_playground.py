"""A fleet replica's requests opened in the playground: the playground, played by the
engine, gives each of the replica's requests the hit it had in the fleet run (whatever
the router: round-robin's replicas and prefix-aware's), and a run too large says why."""

from __future__ import annotations

import pytest

from engine.lab.fleet.in_order import InOrderFleet, run_fleet_in_order
from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.playground import (
    fleet_playground_refusal,
    replica_playground_code,
    replica_requests,
    request_id,
)
from engine.lab.fleet.timed import run_fleet_timed
from engine.lab.play import playground_code
from engine.lab.play.scenario import ScenarioError
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.traces.request_trace import TraceEntry, read_trace

CONVERSATION = "content/traces/conversation_trace.jsonl.gz"
# 399 blocks of 64 tokens each (and vLLM's null block): it evicts, and two of the first
# 16 prompts never fit.
SMALL = FleetKnobs(replicas=2, capacity_tokens=25_536, block_size=64)


def entries(count: int = 16) -> list[TraceEntry]:
    return read_trace(CONVERSATION, limit=count)


@pytest.mark.parametrize("router", ["round-robin", "prefix-aware"])
def test_each_replicas_playground_has_its_hits_in_the_fleet(router: str) -> None:
    trace = entries()
    fleet = InOrderFleet(trace, FleetKnobs(**{**vars(SMALL), "router": router}))
    run = fleet.run()
    assert run.skipped and len(set(run.routes)) == 2
    for replica in range(run.replicas):
        code = replica_playground_code(trace, run, replica)
        timeline = build_timeline(
            scenario_from_dict(playground_code.decode(code)), "default", trace=False
        )
        served = replica_requests(run, replica)
        assert len(timeline.steps) == 1 + 2 * len(served)  # added, then served in one step
        last = timeline.steps[-1].snapshot
        assert [r.request_id for r in last.requests] == [request_id(i) for i in served]
        assert all(r.status == "FINISHED_LENGTH_CAPPED" for r in last.requests)
        played = {r.request_id: r.num_cached_tokens for r in last.requests}
        assert played == {request_id(i): fleet.hits[i] for i in served}
        assert last.stats.hits == run.per_replica[replica].hits


@pytest.mark.parametrize(
    ("knobs", "reason"),
    [
        ({"block_size": 512, "capacity_tokens": 1_000_000}, "its blocks are 512 tokens"),
        ({"capacity_tokens": 64_000}, "the pool of each replica has 1,001 blocks"),
        (
            {"engine": "sglang"},
            "a fleet on the model of SGLang does not open; the same run on vLLM does",
        ),
    ],
)
def test_a_run_too_large_for_the_playground_says_why(knobs: dict[str, object], reason: str) -> None:
    run = run_fleet_in_order(entries(4), FleetKnobs(**{**vars(SMALL), **knobs}))
    assert reason in (fleet_playground_refusal(run) or "")
    with pytest.raises(ScenarioError, match=reason):
        replica_playground_code(entries(4), run, 0)


def test_a_replica_with_too_much_to_record_says_why() -> None:
    run = run_fleet_in_order(entries(60), SMALL)
    assert fleet_playground_refusal(run) is None
    with pytest.raises(ScenarioError, match=r"requests over .* engine steps are too much"):
        replica_playground_code(entries(60), run, 0)


def test_with_time_a_fleet_does_not_open() -> None:
    run = run_fleet_timed(entries(4), FleetKnobs(**{**vars(SMALL), "capacity_tokens": 30_000}))
    assert "with time" in (fleet_playground_refusal(run) or "")
