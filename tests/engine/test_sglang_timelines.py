"""Scenarios played on SGLang 0.5.23's model (engine/lab/play/sglang/timeline.py): goldens,
the tree's invariants at every step, the facts each scenario's lesson rests on, the
traced lines and the CLI.

After an intended behaviour change, regenerate the goldens with
``PCL_UPDATE_GOLDENS=1 pytest tests/engine/test_sglang_timelines.py`` and review the diff.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.lab.cli.main import main
from engine.lab.play.line_tracer import FunctionTrace
from engine.lab.play.scenario import (
    Scenario,
    ScenarioError,
    load_scenario,
    parse_scenario,
    scenario_names,
    sglang_refusal,
)
from engine.lab.play.sglang.snapshot import ROOT_ID, SGLangSnapshot
from engine.lab.play.sglang.timeline import (
    SGLangTimeline,
    build_sglang_timeline,
    count_sglang_steps,
)
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from tests.engine.test_goldens import run_on_python

GOLDENS = Path(__file__).parent / "goldens_sglang"
SGLANG_SCENARIOS = (
    "shared-prefix",
    "unaligned-prefix",
    "cache-salt",
    "eviction-order",
    "queue-order",
    "lora-adapter",
    "flush-cache",
    "retraction",
    "page-size",
    "in-batch-prefix",
    "lpm-fallback",
    "image-in-the-prompt",
)
CASES = [
    (name, mode) for name in scenario_names("sglang") for mode in load_scenario(name).sglang.modes
]


@cache
def timeline(name: str, mode: str, trace: bool = True) -> SGLangTimeline:
    return build_sglang_timeline(load_scenario(name), mode, trace=trace)


def at(t: SGLangTimeline, key: str) -> Any:
    """The (last) step narrated by ``key``."""
    return [s for s in t.steps if s.narration_key == key][-1]


# -- which scenarios, on which engines ------------------------------------------------------


def test_the_chapters_scenarios_play_on_both_engines() -> None:
    assert sorted(scenario_names("sglang")) == sorted(SGLANG_SCENARIOS)
    # every one plays on vLLM too, so the app's list (vLLM's) holds them all
    assert set(scenario_names("sglang")) <= set(scenario_names())
    for name in scenario_names():
        scenario = load_scenario(name)
        assert "vllm" in scenario.engines
        assert (sglang_refusal(scenario) is None) == (name in SGLANG_SCENARIOS), name


def test_a_vllm_timeline_is_unchanged_and_says_its_engine() -> None:
    t = build_timeline(load_scenario("shared-prefix"), "default", trace=False)
    assert t.engine == Timeline.engine == "vllm"
    assert "engine" not in json.loads(t.to_json())
    s = timeline("shared-prefix", "fcfs", False)
    assert s.engine == "sglang" and json.loads(s.to_json())["engine"] == "sglang"


def _scenario(data: dict[str, Any]) -> Scenario:
    base = {"engines": ["vllm", "sglang"], "pool": {"num_gpu_blocks": 16, "block_size": 4}}
    return parse_scenario("t", {**base, **data})


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"engines": ["vllm"]}, "does not run on SGLang"),
        (
            {
                "steps": [
                    {"do": "add_request", "id": "A", "prompt": "1..4"},
                    {"do": "abort", "id": "A"},
                ]
            },
            "abort is vLLM's",
        ),
        (
            {"steps": [{"do": "add_request", "id": "A", "prompt": "1..4", "prompt_logprobs": 1}]},
            "prompt_logprobs is not modelled on SGLang",
        ),
        ({"engine": {"offload": True}}, "not modelled on SGLang"),
        ({"sglang": {"modes": ["dfs-weight"]}}, "schedule policies"),
        ({"sglang": {"page_size": 4, "num_slots": 10}}, "not a whole number of pages"),
        (
            {
                "sglang": {"num_slots": 4},
                "steps": [{"do": "add_request", "id": "A", "prompt": "1..8"}],
            },
            "needs 11 KV slots",
        ),
        ({"sglang": {"colour": 1}}, "unknown option 'colour'"),
        ({"sglang": {"narration": {"lpm": {"a": 1}}}}, "must be text or a table of texts"),
    ],
)
def test_what_sglang_cannot_play_is_refused_with_the_reason(
    data: dict[str, Any], says: str
) -> None:
    with pytest.raises(ScenarioError, match=says):
        scenario = _scenario(data)
        refusal = sglang_refusal(scenario)
        if refusal:
            raise ScenarioError(refusal)


# -- goldens and determinism ----------------------------------------------------------------


def golden_view(t: SGLangTimeline) -> dict[str, Any]:
    return {
        "scenario": t.scenario,
        "mode": t.mode,
        "steps": [
            {
                "label": step.label,
                "result": step.result,
                "narration_key": step.narration_key,
                "functions": [trace.qualname for trace in step.code],
                "focus": step.focus.qualname if step.focus else None,
                "facts": dataclasses.asdict(step.facts),
                "snapshot": step.snapshot.to_dict(),
            }
            for step in t.steps
        ],
    }


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_sglang_timeline_matches_golden(name: str, mode: str) -> None:
    actual = json.loads(json.dumps(golden_view(timeline(name, mode))))
    path = GOLDENS / f"{name}-{mode}.json"
    if os.environ.get("PCL_UPDATE_GOLDENS") == "1":
        GOLDENS.mkdir(exist_ok=True)
        path.write_text(json.dumps(actual, indent=1) + "\n", encoding="utf-8")
    assert actual == json.loads(path.read_text(encoding="utf-8"))


def test_every_sglang_golden_belongs_to_a_case() -> None:
    assert sorted(p.stem for p in GOLDENS.glob("*.json")) == sorted(f"{n}-{m}" for n, m in CASES)


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_sglang_timeline_json_is_deterministic(name: str, mode: str) -> None:
    scenario = load_scenario(name)
    # another timeline built in between must not shift node ids or clocks
    first = build_sglang_timeline(scenario, mode)
    build_sglang_timeline(load_scenario("cache-salt"), "fcfs")
    assert first.to_json() == build_sglang_timeline(scenario, mode).to_json()


DIGEST_SCRIPT = """
from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.sglang.timeline import build_sglang_timeline
for name in scenario_names("sglang"):
    scenario = load_scenario(name)
    for mode in scenario.sglang.modes:
        print(name, mode, build_sglang_timeline(scenario, mode).digest())
"""


def test_sglang_timeline_json_is_byte_identical_on_python_3_12() -> None:
    """Pyodide runs Python 3.12: the traced SGLang timelines must agree there too."""
    other = [line for line in run_on_python("3.12", DIGEST_SCRIPT).split("\n") if line]
    assert other == [f"{n} {m} {timeline(n, m).digest()}" for n, m in CASES]


# -- the tree's invariants, at every step -----------------------------------------------------


def check_tree(snapshot: SGLangSnapshot) -> None:
    nodes = {n.node_id: n for n in snapshot.nodes}
    assert len(nodes) == len(snapshot.nodes), "a node id twice"
    root = nodes[ROOT_ID]
    assert root.parent is None and root.lock_ref == 1 and not root.token_ids
    children: dict[int, list[int]] = {i: [] for i in nodes}
    for node in snapshot.nodes:
        if node.node_id != ROOT_ID:
            assert node.parent in nodes
            children[node.parent].append(node.node_id)
            assert len(node.value) == len(node.token_ids) > 0
            assert node.prefix_tokens == nodes[node.parent].prefix_tokens + len(node.token_ids)
            if snapshot.page_size > 1:
                assert len(node.token_ids) % snapshot.page_size == 0
    for node_id, kids in children.items():
        node = nodes[node_id]
        # each child's locks pass through its parent
        if node_id != ROOT_ID:
            assert node.lock_ref >= sum(nodes[k].lock_ref for k in kids) >= 0
        assert node.evictable_leaf == (node_id != ROOT_ID and node.lock_ref == 0 and not kids)
        firsts = [(*nodes[k].token_ids[: snapshot.page_size], nodes[k].extra_key) for k in kids]
        assert len(set(firsts)) == len(firsts), "two children start alike"
    tokens = sum(len(n.token_ids) for n in snapshot.nodes)
    assert snapshot.evictable_size + snapshot.protected_size == snapshot.tree_tokens == tokens
    assert snapshot.protected_size == sum(len(n.token_ids) for n in snapshot.nodes if n.lock_ref)
    # every slot's page is in exactly one place: the tree, the free list or a running
    # request's own part of its row
    page = snapshot.page_size
    tree_pages = [p for n in snapshot.nodes for p in dict.fromkeys(s // page for s in n.value)]
    free_pages = list(snapshot.free_pages) if page > 1 else list(snapshot.free_slots)
    own_pages: list[int] = []
    for r in snapshot.requests:
        if r.status == "running":
            assert r.locked_node is not None
            assert r.kv_row[: r.cache_protected_len] == _path_slots(snapshot, r.locked_node)
            own_pages += list(dict.fromkeys(s // page for s in r.kv_row[r.cache_protected_len :]))
        else:
            assert r.locked_node is None
            if r.status == "finished":
                assert not r.kv_row
    every = Counter(tree_pages + free_pages + own_pages)
    assert max(every.values(), default=1) == 1, f"a slot twice: {every.most_common(3)}"
    assert set(every) == set(range(1, snapshot.num_slots // page + 1))
    assert len(snapshot.free_slots) == len(set(snapshot.free_slots))
    assert 0 <= snapshot.counters.hits <= snapshot.counters.queries


def _path_slots(snapshot: SGLangSnapshot, node_id: int) -> tuple[int, ...]:
    return tuple(s for n in snapshot.path(node_id) for s in snapshot.node(n).value)


def check_facts(t: SGLangTimeline) -> None:
    for before, step in zip(t.steps, t.steps[1:], strict=False):
        now = {n.node_id for n in step.snapshot.nodes}
        was = {n.node_id for n in before.snapshot.nodes}
        facts = step.facts
        assert not set(facts.evicted) & now, "an evicted node is still in the tree"
        assert set(facts.evicted) <= was | set(facts.inserted) | set(facts.split_nodes)
        assert set(facts.inserted) | set(facts.split_nodes) <= now | set(facts.evicted)
        assert step.snapshot.counters.evicted_tokens - before.snapshot.counters.evicted_tokens == (
            facts.evicted_tokens
        )
        for walk in facts.walks:
            assert walk.matched_tokens <= walk.key_tokens
            if walk.phase in ("admit", "priority") and walk.path:
                assert walk.path[-1] in now | set(facts.evicted)


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_the_tree_holds_its_invariants_at_every_step(name: str, mode: str) -> None:
    t = timeline(name, mode)
    for step in t.steps:
        check_tree(step.snapshot)
    check_facts(t)


def test_the_tree_check_catches_a_slot_twice() -> None:
    snapshot = at(timeline("shared-prefix", "fcfs"), "both_finish").snapshot
    doubled = dataclasses.replace(snapshot, free_slots=(*snapshot.free_slots, 1))
    with pytest.raises(AssertionError, match="a slot twice"):
        check_tree(doubled)
    # a lock nobody holds: on an unlocked node (S1 still runs and holds its path)
    i, node = next((i, n) for i, n in enumerate(snapshot.nodes) if n.lock_ref == 0)
    locked = dataclasses.replace(node, lock_ref=1)
    nodes = (*snapshot.nodes[:i], locked, *snapshot.nodes[i + 1 :])
    with pytest.raises(AssertionError):
        check_tree(dataclasses.replace(snapshot, nodes=nodes))


PREFIXES = [(), (1, 2, 3, 4, 5, 6), (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), (40, 41, 42)]


@st.composite
def random_scenarios(draw: st.DrawFn) -> tuple[Scenario, str]:
    page_size = draw(st.sampled_from([1, 1, 2, 4]))
    steps: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 8))):
        prompt = list(draw(st.sampled_from(PREFIXES)))
        prompt += draw(st.lists(st.integers(1, 60), min_size=1, max_size=10))
        request: dict[str, Any] = {
            "do": "add_request",
            "id": f"R{i}",
            "prompt": prompt,
            "max_tokens": draw(st.integers(1, 4)),
        }
        salt = draw(st.sampled_from([None, None, "a"]))
        if salt:
            request["cache_salt"] = salt
        steps.append(request)
        if draw(st.booleans()):
            steps.append({"do": "step", "count": draw(st.integers(1, 3))})
        if draw(st.integers(0, 9)) == 0:
            steps.append({"do": "reset_prefix_cache"})
    steps.append({"do": "run_until_idle"})
    data = {
        "engines": ["vllm", "sglang"],
        "pool": {"num_gpu_blocks": 40, "block_size": 4},
        "sglang": {
            "modes": ["fcfs", "lpm"],
            "page_size": page_size,
            "num_slots": draw(st.integers(8, 24)) * 4,
            "eviction_policy": draw(st.sampled_from(["lru", "lru", "lfu", "fifo", "mru"])),
        },
        "steps": steps,
    }
    return parse_scenario("random", data), draw(st.sampled_from(["fcfs", "lpm"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_scenarios())
def test_random_scenarios_keep_the_trees_invariants_at_every_step(
    played: tuple[Scenario, str],
) -> None:
    scenario, mode = played
    t = build_sglang_timeline(scenario, mode, trace=False)
    for step in t.steps:
        check_tree(step.snapshot)
        assert step.result is None or not step.result.startswith(("AssertionError", "not run"))
    check_facts(t)
    last = t.steps[-1].snapshot
    assert not last.waiting and not last.running  # run_until_idle ran them all


def test_a_decode_that_needs_a_new_page_finds_one() -> None:
    prompts = [[1, 2, 3, 4, 5, 6, 1], [1, 2, 3, 4, 5, 6, 1], [*range(1, 12), 1]]
    prompts += [[1, 2, 3, 4, 5, 6, 1], [1]]
    steps: list[dict[str, Any]] = []
    for i, (prompt, max_tokens) in enumerate(zip(prompts, [1, 3, 2, 2, 1], strict=True)):
        request = {"do": "add_request", "id": f"R{i}", "prompt": prompt, "max_tokens": max_tokens}
        if i == 3:
            request["cache_salt"] = "a"
        steps += [request, {"do": "reset_prefix_cache"}]
    data = {
        "engines": ["vllm", "sglang"],
        "pool": {"num_gpu_blocks": 40, "block_size": 4},
        "sglang": {"modes": ["fcfs", "lpm"], "page_size": 4, "num_slots": 32},
        "steps": [*steps, {"do": "run_until_idle"}],
    }
    t = build_sglang_timeline(parse_scenario("random", data), "fcfs", trace=False)
    assert all(step.result is None or "AssertionError" not in step.result for step in t.steps)


def test_a_retraction_is_logged_and_the_request_waits_again() -> None:
    # as tests/engine/sglang/test_scheduler.py's retraction: R0 (2 tokens, 60 out) runs, R1
    # (2 tokens, 53 out) is admitted a step later against R0's 59 x 0.7 expected outputs,
    # and the pool of 100 runs out before R1 is done
    data = {
        "engines": ["vllm", "sglang"],
        "pool": {"num_gpu_blocks": 40, "block_size": 4},
        "sglang": {"num_slots": 100},
        "steps": [
            {"do": "add_request", "id": "R0", "prompt": [1, 2], "max_tokens": 60},
            {"do": "step"},
            {"do": "add_request", "id": "R1", "prompt": [3, 4], "max_tokens": 53},
            {"do": "run_until_idle"},
        ],
    }
    t = build_sglang_timeline(parse_scenario("retract", data), "fcfs", trace=False)
    (step,) = [s for s in t.steps if s.facts.retraction is not None]
    retraction = step.facts.retraction
    assert retraction is not None and retraction.retracted == ("R1",) and not retraction.aborted
    before = t.steps[step.index - 1].snapshot
    assert before.running == ("R0", "R1") and step.snapshot.waiting == ("R1",)
    r1 = step.snapshot.request("R1")
    assert r1.status == "waiting" and r1.kv_row == () and r1.locked_node is None
    # the slots it held came back, not its prompt's, which are the tree's
    held = before.request("R1")
    assert retraction.tokens_gained == len(held.kv_row) - held.cache_protected_len
    assert retraction.old_ratio < 0.7 and retraction.new_ratio == 1.0
    (line,) = step.snapshot.logs
    assert line.level == "WARNING" and line.message == (
        "KV cache pool is full. Retract requests. #retracted_reqs: 1, "
        f"#new_tokens_gained: {retraction.tokens_gained}, "
        f"#new_token_ratio: {retraction.old_ratio:.4f} -> 1.0000"
    )
    assert step.result == "retract R1; decode R0"
    text = t.narration_text(step)  # no text written: described from the step's facts
    assert "R1 went back to the waiting queue" in text and "now 1.0000" in text
    # release_req frees only what lies past cache_protected_len: R1's prompt, put in the
    # tree after its prefill, stays there, unlocked, and the text says so
    prompt_nodes = [n for n in step.snapshot.nodes if n.token_ids[:2] == (3, 4)]
    assert prompt_nodes and all(n.lock_ref == 0 for n in prompt_nodes)
    assert "their prompts, in the tree since their prefill, unlocked" in text
    last = t.steps[-1].snapshot
    assert not last.waiting and not last.running
    assert last.request("R1").num_output_tokens == 53
    for s in t.steps:
        check_tree(s.snapshot)
    check_facts(t)


# -- the lessons' facts, on both engines --------------------------------------------------------


def test_shared_prefix_reuses_the_system_prompt_and_splits_s1s_node() -> None:
    step = at(timeline("shared-prefix", "fcfs"), "second_hits")
    s1, s2 = step.snapshot.request("S1"), step.snapshot.request("S2")
    assert s2.hit_tokens == 16 and s1.kv_row[:16] == s2.kv_row[:16]
    (split,) = step.facts.splits
    shared = step.snapshot.node(split.node)
    assert shared.token_ids == tuple(range(1, 17)) and shared.lock_ref == 2
    assert step.snapshot.node(split.child).parent == split.node


def _with_page_size(name: str, page_size: int) -> Scenario:
    scenario = load_scenario(name)
    return dataclasses.replace(
        scenario, sglang=dataclasses.replace(scenario.sglang, page_size=page_size)
    )


def test_a_prefix_ending_mid_block_is_reused_to_the_token_at_page_size_1() -> None:
    shared = 10  # the prompts' common prefix, from the scenario
    sglang = at(timeline("unaligned-prefix", "fcfs"), "second_done").snapshot
    vllm = build_timeline(load_scenario("unaligned-prefix"), "default", trace=False)
    assert sglang.request("U2").hit_tokens == shared
    assert vllm.steps[-1].snapshot.request("U2").num_cached_tokens == shared // 4 * 4
    # with pages of vLLM's block size, SGLang rounds down to whole pages too
    paged = build_sglang_timeline(_with_page_size("unaligned-prefix", 4), "fcfs", trace=False)
    assert paged.steps[-1].snapshot.request("U2").hit_tokens == shared // 4 * 4
    check_tree(paged.steps[-1].snapshot)


def test_under_pressure_both_evict_a_tail_and_the_tree_ranks_tails_by_last_access() -> None:
    step = at(timeline("eviction-order", "fcfs"), "r4_evicts")
    (eviction,) = step.facts.evictions
    before = at(timeline("eviction-order", "fcfs"), "r4").snapshot
    assert before.node(eviction.node).token_ids == tuple(range(201, 209))  # R2's node
    kept = {t for n in step.snapshot.nodes for t in n.token_ids}
    assert set(range(1, 11)) <= kept  # all of R1's prefix stays
    # both leaves could go; R3's walk stamped R1's node, so R2's is the older
    leaves = {n.node_id: n for n in before.nodes if n.evictable_leaf}
    r1_tail = next(n for n in leaves.values() if 10 in n.token_ids)
    assert set(leaves) == {eviction.node, r1_tail.node_id}
    assert leaves[eviction.node].last_access_time < r1_tail.last_access_time
    vllm = build_timeline(load_scenario("eviction-order"), "default", trace=False)
    r4 = [s for s in vllm.steps if s.narration_key == "r4_evicts"][-1]
    r1_done = [s for s in vllm.steps if s.narration_key == "r1_done"][-1].facts
    r1_blocks = r1_done.cached
    assert r1_blocks[1] in r4.facts.evicted  # vLLM evicts R1's second block...
    # ...the tail of R1's cached chain: freed last block first, it joined the queue
    # ahead of its parent, as a tree's leaf goes before its parent
    assert r1_done.freed_to_tail == (r1_blocks[1], r1_blocks[0])
    text = " ".join(timeline("eviction-order", "fcfs").narration_text(step).split())
    assert "Both engines take a chain's tail first" in text
    assert "children before" not in text


def test_a_namespace_isolates_like_a_salt() -> None:
    t = timeline("cache-salt", "fcfs")
    last = t.steps[-1].snapshot
    hits = {r.request_id: r.hit_tokens for r in last.requests}
    assert hits == {"alice-1": 0, "alice-2": 16, "bob-1": 0, "fresh-1": 0, "fresh-2": 0}
    under_root = [n for n in last.nodes if n.parent == ROOT_ID]
    assert sorted(str(n.extra_key) for n in under_root) == ["09ab", "alice", "bob", "f7c1"]
    vllm = build_timeline(load_scenario("cache-salt"), "default", trace=False)
    assert {
        r.request_id: max(r.num_cached_tokens, 0) for r in vllm.steps[-1].snapshot.requests
    } == (hits)


def test_lpm_ranks_the_waiting_queue_by_match_depth_and_fcfs_by_arrival() -> None:
    fcfs = at(timeline("queue-order", "fcfs"), "first_batch")
    lpm = at(timeline("queue-order", "lpm"), "first_batch")
    assert fcfs.facts.admitted == ("C1", "W1") and fcfs.snapshot.waiting == ("C2", "W2")
    assert lpm.facts.admitted == ("W1", "W2") and lpm.snapshot.waiting == ("C1", "C2")
    ranked = {w.request_id: w.matched_tokens for w in lpm.facts.walks if w.phase == "priority"}
    assert ranked == {"C1": 0, "W1": 24, "C2": 0, "W2": 24}
    vllm = build_timeline(load_scenario("queue-order"), "default", trace=False)
    first = [s for s in vllm.steps if s.narration_key == "first_batch"][-1].snapshot
    assert [r.request_id for r in first.requests if r.status == "WAITING"] == ["C2", "W2"]


# -- the code panel: lines of engine/sglang that exist ------------------------------------------


def check_trace(t: SGLangTimeline, trace: FunctionTrace) -> None:
    assert trace.file.startswith("engine/sglang/") and trace.file.endswith(".py")
    lines = t.source(trace.file).split("\n")
    assert 1 <= trace.start_line <= trace.end_line <= len(lines)
    assert set(trace.lines) <= set(range(trace.start_line, trace.end_line + 1))
    assert trace.last_line in trace.lines
    name = trace.qualname.split(".")[-1]
    head = "\n".join(lines[trace.start_line - 1 : trace.end_line])
    assert f"def {name}(" in head, (trace.file, trace.qualname)
    for line in trace.lines:
        text = lines[line - 1].strip()
        assert text and not text.startswith("#"), (trace.file, line, text)


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_the_traced_lines_are_lines_of_sglangs_model(name: str, mode: str) -> None:
    t = timeline(name, mode)
    sources = dict(t.sources)
    for path, text in sources.items():
        assert Path(path).read_text(encoding="utf-8") == text
    for step in t.steps[1:]:
        assert step.code, f"{name} step {step.index}: no line of engine/sglang ran"
        for trace in step.code:
            check_trace(t, trace)
        assert step.focus in step.code
    step = at(t, t.steps[-1].narration_key)
    assert "Scheduler.schedule" in {trace.qualname for trace in step.code}


def test_the_trace_check_catches_a_line_that_is_not_there() -> None:
    t = timeline("shared-prefix", "fcfs")
    trace = t.steps[2].code[0]
    with pytest.raises(AssertionError):
        check_trace(t, dataclasses.replace(trace, lines=(*trace.lines, trace.end_line + 1)))
    with pytest.raises(AssertionError):
        check_trace(t, dataclasses.replace(trace, qualname="Scheduler.nowhere"))


# -- the CLI --------------------------------------------------------------------------------


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    out = io.StringIO()
    try:
        status = main(args, out=out)
    except SystemExit as stop:
        status = stop.code  # type: ignore[assignment]
    return status, out.getvalue(), capsys.readouterr().err


def test_cli_plays_a_scenario_on_sglang_step_by_step(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(["--engine", "sglang", "--scenario", "shared-prefix"], capsys)
    assert status == 0
    assert out.startswith("Shared system prompt [SGLang 0.5.23, fcfs, page size 1, 60 KV slots")
    # S1 sat out S2's prefill (step 4), so only S2 is done at the last step
    assert "== step 4 / 5: step() -> prefill S2 (22 tokens, 16 cached)\n" in out
    assert "== step 5 / 5: step() -> decode S1, S2; finished S2\n" in out
    assert "n2 tokens [1..16] (16) slots [1..16] lock_ref=2" in out
    assert "admit match S2: 16 of 21 tokens, path n2; split made n2" in out
    assert (
        "log: INFO sglang.srt.managers.scheduler_components.metrics_reporter: Prefill batch" in out
    )
    assert "code: engine/sglang/scheduler.py line" in out


def test_cli_json_is_the_sglang_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(
        ["--engine", "sglang", "--scenario", "queue-order", "--mode", "lpm", "--json"], capsys
    )
    assert status == 0
    data = json.loads(out)
    assert data["engine"] == "sglang" and data["mode"] == "lpm"
    assert out.strip() == timeline("queue-order", "lpm").to_json()


def test_cli_lists_the_sglang_scenarios(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(["--engine", "sglang", "--list"], capsys)
    assert status == 0
    listed = out.partition("\n\n")[0]  # then the engines and commands
    assert [line.split()[0] for line in listed.splitlines()] == list(scenario_names("sglang"))
    assert "(SGLang modes: fcfs, lpm)" in out


def test_cli_page_size_override(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--engine", "sglang", "--scenario", "unaligned-prefix", "--page-size", "4", "--json"]
    status, out, _ = _run(args, capsys)
    assert status == 0
    last = json.loads(out)["steps"][-1]["snapshot"]
    assert last["page_size"] == 4
    assert next(r for r in last["requests"] if r["request_id"] == "U2")["hit_tokens"] == 8


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--engine", "sglang", "--scenario", "reset"], "'reset' does not run on SGLang"),
        (["--engine", "sglang", "--scenario", "keep-offload-fixed"], "does not run on SGLang"),
        (["--engine", "sglang", "--scenario", "eviction-order", "--mode", "lpm"], "unknown mode"),
        (["--engine", "sglang", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["--engine", "sglang", "--scenario", "queue-order", "--page-size", "7"], "whole number"),
        (["--engine", "both", "--scenario", "shared-prefix"], "one engine at a time"),
    ],
)
def test_cli_a_scenario_sglang_cannot_play_is_one_line_and_exit_2(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _run(args, capsys)
    assert status == 2 and not out
    assert says in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_count_sglang_steps_counts_the_timelines_steps(name: str, mode: str) -> None:
    assert count_sglang_steps(load_scenario(name), mode) == len(timeline(name, mode)) - 1


FILE = """
title = "mine"
engines = ["{engines}"]
[pool]
num_gpu_blocks = 8
block_size = 4
[sglang]
modes = ["lpm"]
page_size = 2
[[steps]]
do = "add_request"
id = "A"
prompt = "1..9"
max_tokens = 2
[[steps]]
do = "add_request"
id = "B"
prompt = "1..7"
[[steps]]
do = "run_until_idle"
"""


def test_cli_plays_a_learners_file_on_sglang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(FILE.format(engines='vllm", "sglang'), encoding="utf-8")
    status, out, _ = _run(["--engine", "sglang", "--file", str(path), "--json"], capsys)
    assert status == 0
    data = json.loads(out)
    assert (data["mode"], data["page_size"], data["num_slots"]) == ("lpm", 2, 28)
    last = data["steps"][-1]["snapshot"]
    assert not last["waiting"] and not last["running"] and last["free_pages"]
    # B's first page-aligned tokens were in the tree (A's), so its own pages went back
    step = data["steps"][3]
    assert step["facts"]["splits"] and step["facts"]["freed"]
    path.write_text(FILE.format(engines="sglang"), encoding="utf-8")
    status, out, err = _run(["--file", str(path)], capsys)
    assert status == 2 and "does not run on vLLM" in err and len(err.strip().splitlines()) == 1
