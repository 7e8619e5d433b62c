"""vLLM 0.33.0's hash map keeps no cached block whose parent's hash it lost by eviction.

The free queue is ordered by release, a request releases its blocks last block first
(``SingleTypeKVCacheManager.free``), and a request holding a child block holds a block
with its parent's hash: so a cached block always leaves the free queue's head before
every block of its chain's ancestors, as SGLang's tree evicts a leaf before its parent.
Only a reset that clears hashes while requests run (keep mode's, proposed) leaves cached
blocks behind an unreachable parent (keep-aftermath). Checked on random plays."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from engine.lab.play.scenario import ScenarioError, load_scenario, parse_scenario
from engine.lab.play.vllm.snapshot import Snapshot
from engine.lab.play.vllm.timeline import build_timeline


def orphans(snapshot: Snapshot) -> set[str]:
    """Hashes in the map whose parent hash is not in it (a chain's first block aside)."""
    in_map = {entry.hash_label for entry in snapshot.hash_map}
    return {
        link.hash_label
        for request in snapshot.requests
        for link in request.chain
        if link.hash_label in in_map
        and link.parent_label is not None
        and link.parent_label not in in_map
    }


requests = st.lists(
    st.tuples(
        st.integers(0, 2),  # which shared prefix
        st.lists(st.integers(1, 3), max_size=8),  # its own tokens
        st.integers(1, 10),  # max_tokens
        st.integers(0, 3),  # steps before the next arrival
        st.booleans(),  # prompt logprobs: a lookup skipped, duplicate blocks cached
    ),
    min_size=2,
    max_size=7,
)


@settings(max_examples=150, deadline=None)
@given(
    st.integers(5, 12),
    st.sampled_from([2, 4]),
    st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=14), min_size=3, max_size=3),
    requests,
    st.sampled_from(["default", "first-chunk"]),
)
def test_eviction_never_leaves_a_cached_block_behind_its_parent(
    num_gpu_blocks: int,
    block_size: int,
    prefixes: list[list[int]],
    arrivals: list[tuple[int, list[int], int, int, bool]],
    mode: str,
) -> None:
    steps: list[dict[str, object]] = []
    for i, (prefix, own, max_tokens, gap, logprobs) in enumerate(arrivals):
        request: dict[str, object] = {
            "do": "add_request",
            "id": f"R{i}",
            "prompt": prefixes[prefix] + own,
            "max_tokens": max_tokens,
        }
        if logprobs:
            request["prompt_logprobs"] = 1
        steps += [request, *[{"do": "step"}] * gap]
    steps.append({"do": "run_until_idle"})
    data = {
        "modes": ["default", "first-chunk"],
        "pool": {"num_gpu_blocks": num_gpu_blocks, "block_size": block_size},
        "steps": steps,
    }
    try:
        scenario = parse_scenario("random", data)
    except ScenarioError:
        return  # a request larger than the pool
    evicted = 0
    for step in build_timeline(scenario, mode, trace=False).steps:
        assert not orphans(step.snapshot), step.label
        evicted += len(step.facts.evicted)
    event("evicted" if evicted else "nothing evicted")


def test_a_keep_reset_does_leave_one_behind() -> None:
    """The check sees an unreachable child where there is one."""
    timeline = build_timeline(load_scenario("keep-aftermath"), "keep", trace=False)
    assert any(orphans(step.snapshot) for step in timeline.steps)
