"""A fleet replica's share as a playground scenario: the requests the router sent to that
replica, on one engine, as the playground plays one engine.

A fleet run in order (engine/lab/fleet/in_order.py) serves each request alone to its end
before the next, prompt only (the in-order replay's method: look up, allocate, free). The
playground says the same with its own actions: each request the replica served, in the
order it was routed, is added with ``max_tokens`` 1 and followed by one engine step, in
which vLLM's scheduler prefills it whole (the batch budget is the longest prompt), samples
its one token and frees it. Timeline step 2k of the playground is the replica after its
k-th request, and the playground's hit for each request is the replica's hit in the fleet
(tests/engine/test_fleet_playground.py). A request the replica skipped (larger than its
pool) never touched its cache and is left out. The data and the address are the workload
lab's (engine/lab/workload/playground.py), the size limits the workload lab's too.

Only a vLLM run in order opens: with time a replica's requests overlap and decode for
hundreds of engine steps, and SGLang's in-order replay is its tree's own calls, not its
scheduler's steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.lab.fleet.result import FleetRun
from engine.lab.play.scenario import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    Action,
    RequestSpec,
    ScenarioError,
)
from engine.lab.play.scenario_file import MAX_BLOCK_SIZE
from engine.lab.traces.request_trace import TraceEntry, prompt_token_ids
from engine.lab.traces.vllm.replay import num_gpu_blocks_for
from engine.lab.workload.playground import (
    check_drawable_pool,
    playground_code_of,
    playground_data,
    too_much_to_record,
)
from engine.lab.workload.workload import scenario_fits
from engine.vllm.kv_cache_manager import cdiv

# Each request is added, then one engine step serves it.
ACTIONS_PER_REQUEST = 2


def request_id(index: int) -> str:
    """A request's id in a replica's playground: its place in the trace (from 0)."""
    return f"req-{index}"


def replica_requests(run: FleetRun, replica: int) -> list[int]:
    """The requests the router sent to ``replica`` that it served, in the order routed."""
    skipped = set(run.skipped)
    return [i for i, r in enumerate(run.routes) if r == replica and i not in skipped]


def fleet_playground_refusal(run: FleetRun) -> str | None:
    """Why no replica of this run opens in the playground, or None."""
    if run.mode != "in-order":
        return (
            "with time the requests of a replica overlap and decode for hundreds of "
            "engine steps; a run in order opens, each request served alone"
        )
    if run.engine != "vllm":
        return "a fleet on the model of SGLang does not open; the same run on vLLM does"
    if run.block_size > MAX_BLOCK_SIZE:
        return (
            f"its blocks are {run.block_size:,} tokens; the playground takes blocks of "
            f"at most {MAX_BLOCK_SIZE} tokens"
        )
    try:
        check_drawable_pool(
            num_gpu_blocks_for(run.capacity_tokens, run.block_size), "the pool of each replica"
        )
    except ScenarioError as error:
        return str(error)
    return None


def replica_playground_data(
    entries: Sequence[TraceEntry], run: FleetRun, replica: int
) -> dict[str, Any]:
    """Replica ``replica``'s share of the run as playground data."""
    served = replica_requests(run, replica)
    actions: list[Action] = []
    longest = 0
    for index in served:
        tokens = tuple(prompt_token_ids(entries[index]))
        longest = max(longest, len(tokens))
        spec = RequestSpec(request_id(index), tokens, max_tokens=1)
        actions += [Action("add_request", "add", request=spec), Action("step", "step")]
    left_out = sum(1 for i in run.skipped if run.routes[i] == replica)
    skipped = f" ({left_out:,} more never fit its pool and are left out)" if left_out else ""
    return playground_data(
        f"Fleet lab: replica {replica} of {run.replicas}, {run.router}",
        (
            f"The {len(served):,} requests the {run.router} router sent to replica "
            f"{replica} of {run.replicas}{skipped}, in that order, each served alone as the "
            "fleet's in-order replay serves it: added, then one engine step that prefills "
            "its prompt and samples its one token."
        ),
        {
            "num_gpu_blocks": num_gpu_blocks_for(run.capacity_tokens, run.block_size),
            "block_size": run.block_size,
            "max_num_batched_tokens": max(DEFAULT_MAX_NUM_BATCHED_TOKENS, longest),
        },
        actions,
    )


def replica_playground_code(entries: Sequence[TraceEntry], run: FleetRun, replica: int) -> str:
    """The ``?playground=`` code of the replica's share. Raises ScenarioError saying why
    when the run or the share is too large for the playground."""
    refusal = fleet_playground_refusal(run)
    if refusal is not None:
        raise ScenarioError(refusal)
    served = replica_requests(run, replica)
    blocks = sum(cdiv(entries[i].input_length, run.block_size) for i in served)
    actions = ACTIONS_PER_REQUEST * len(served)
    pool = num_gpu_blocks_for(run.capacity_tokens, run.block_size)
    if not scenario_fits(pool, actions, blocks):
        raise ScenarioError(too_much_to_record(len(served), len(served)))
    return playground_code_of(replica_playground_data(entries, run, replica))
