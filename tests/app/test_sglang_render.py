"""The SGLang renderers against SGLang timelines: every node, lock_ref, slot and size
shown is the step's snapshot; the marks are the step's facts; a large tree folds
within a budget; vLLM's renderers are untouched by the SGLang ones."""

from __future__ import annotations

import random
import re
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.render import glossary
from app.render.header import render_sglang_embed_header, render_sglang_header
from app.render.kv_slots import changed_units, render_kv_slots, unit_ids, unit_states
from app.render.metrics import render_sglang_metrics
from app.render.narration import render_log, render_narration
from app.render.radix_tree import MAX_NODES, render_radix_tree, span_text
from app.render.requests import render_sglang_requests
from engine.lab.play.scenario import Scenario, load_scenario, parse_scenario, scenario_names
from engine.lab.play.sglang.snapshot import ROOT_ID
from engine.lab.play.sglang.timeline import SGLangTimeline, build_sglang_timeline
from tests.app.conftest import Element, parse


@cache
def timeline(name: str, mode: str, page_size: int | None = None) -> SGLangTimeline:
    scenario = load_scenario(name)
    if page_size is not None:
        scenario = with_page_size(scenario, page_size)
    return build_sglang_timeline(scenario, mode, trace=False)


def with_page_size(scenario: Scenario, page_size: int) -> Scenario:
    import dataclasses

    return dataclasses.replace(
        scenario, sglang=dataclasses.replace(scenario.sglang, page_size=page_size)
    )


def every_timeline() -> list[tuple[str, str, int | None]]:
    out: list[tuple[str, str, int | None]] = []
    for name in scenario_names("sglang"):
        out += [(name, mode, None) for mode in load_scenario(name).sglang.modes]
    out.append(("unaligned-prefix", "fcfs", 4))  # pages
    out.append(("shared-prefix", "lpm", 2))
    return out


def every_step() -> list[tuple[str, str, int | None, int]]:
    return [
        (name, mode, page, step)
        for name, mode, page in every_timeline()
        for step in range(len(timeline(name, mode, page).steps))
    ]


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split()]


def plain(fragment: str) -> str:
    return re.sub(r"\s+", " ", parse(fragment).text)


# -- the tree -----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "mode", "page", "step"), every_step())
def test_the_tree_is_the_snapshot(name: str, mode: str, page: int | None, step: int) -> None:
    tl = timeline(name, mode, page)
    current = tl.steps[step]
    snapshot = current.snapshot
    shown = parse(render_radix_tree(tl, step))
    items = shown.with_attr("data-node-id")
    # every node, in the snapshot's order (root first, depth first), none made up
    assert [int(e.attrs["data-node-id"]) for e in items] == [n.node_id for n in snapshot.nodes]
    for item, node in zip(items, snapshot.nodes, strict=True):
        units = node.pages if snapshot.page_size > 1 else node.value
        assert item.attrs["role"] == "treeitem"
        assert item.attrs["data-lock-ref"] == str(node.lock_ref)
        assert item.attrs["data-access"] == str(node.last_access_time)
        assert item.attrs["data-tokens"] == str(node.num_tokens)
        assert ints(item.attrs["data-units"]) == list(units)
        assert item.attrs["data-parent"] == ("" if node.parent is None else str(node.parent))
        assert item.attrs["data-evictable"] == str(node.evictable_leaf).lower()
        depth = len(snapshot.path(node.node_id)) + 1
        assert item.attrs["aria-level"] == str(depth)
        text = item.text
        assert f"lock_ref {node.lock_ref}" in text
        if node.node_id != ROOT_ID:
            assert f"[{span_text(node.token_ids)}] ({node.num_tokens})" in text
            assert f"[{span_text(units)}]" in text
            assert f"access {node.last_access_time}" in text
            # protected / evictable as a word, not colour alone
            if node.evictable_leaf:
                assert "evictable leaf" in text
            elif node.lock_ref > 0:
                assert "protected" in text
            if node.extra_key is not None:
                assert f"extra_key {node.extra_key}" in item.attrs["aria-label"]
                if node.parent == ROOT_ID:
                    assert f"extra_key {node.extra_key}" in text
    assert shown.find_all(role="tree")
    # the step's marks are the step's facts, no more, no less
    facts = current.facts
    present = {n.node_id for n in snapshot.nodes}
    walked = {n for w in facts.walks if w.phase in ("priority", "admit") for n in w.path}

    def marked(mark: str) -> set[int]:
        return {
            int(e.attrs["data-node-id"]) for e in items if mark in e.attrs["data-marks"].split()
        }

    assert marked("walked") == walked & present
    assert marked("split") == set(facts.split_nodes) & present
    assert marked("inserted") == set(facts.inserted) & present
    for item in items:
        if "split" in item.attrs["data-marks"].split():
            assert "split here" in item.text
    evicted = [int(e.attrs["data-evicted"]) for e in shown.with_attr("data-evicted")]
    assert evicted == list(facts.evicted)


def test_the_split_mark_is_at_the_steps_a_split_happened_and_nowhere_else() -> None:
    seen = []
    for name, mode, page in every_timeline():
        tl = timeline(name, mode, page)
        for step in range(len(tl.steps)):
            items = parse(render_radix_tree(tl, step)).with_attr("data-node-id")
            said = [e for e in items if "split here" in e.text]
            splits = tl.steps[step].facts.split_nodes
            present = {n.node_id for n in tl.steps[step].snapshot.nodes}
            assert {int(e.attrs["data-node-id"]) for e in said} == set(splits) & present
            if splits:
                seen.append((name, mode, step))
    # shared-prefix's S2 splits S1's node at step 4; eviction-order's R3 splits twice
    assert ("shared-prefix", "fcfs", 4) in seen
    tl = timeline("eviction-order", "fcfs")
    assert len(tl.steps[6].facts.splits) == 2


def test_the_match_path_is_highlighted_as_it_walked() -> None:
    tl = timeline("shared-prefix", "fcfs")
    items = {
        int(e.attrs["data-node-id"]): e
        for e in parse(render_radix_tree(tl, 4)).with_attr("data-node-id")
    }
    walked = [n for n, e in items.items() if "walked" in e.attrs["data-marks"]]
    assert walked == [2] and "matched" in items[2].text  # S2's match ended in the new n2
    assert "inserted" in items[3].attrs["data-marks"]  # S2's own turn
    assert not any(
        "walked" in e.attrs["data-marks"]
        for e in parse(render_radix_tree(tl, 3)).with_attr("data-marks")
    )


def test_namespaces_are_subtrees_under_the_root() -> None:
    tl = timeline("cache-salt", "fcfs")
    last = len(tl.steps) - 1
    keys = {n.extra_key for n in tl.steps[last].snapshot.nodes if n.extra_key is not None}
    assert len(keys) >= 2
    heads = parse(render_radix_tree(tl, last)).with_attr("data-namespace")
    assert {e.attrs["data-namespace"] for e in heads} == keys
    assert all(e.attrs["role"] == "none" for e in heads)


# -- the slot pool ------------------------------------------------------------------------


def expand(element: Element) -> list[int]:
    return list(range(int(element.attrs["data-first"]), int(element.attrs["data-last"]) + 1))


@pytest.mark.parametrize(("name", "mode", "page", "step"), every_step())
def test_the_slot_pool_is_the_snapshot(name: str, mode: str, page: int | None, step: int) -> None:
    tl = timeline(name, mode, page)
    snapshot = tl.steps[step].snapshot
    shown = parse(render_kv_slots(tl, step))
    states = unit_states(snapshot)
    runs = shown.find_all(data_testid="slot-runs")[0].with_attr("data-state")
    covered = [u for run in runs for u in expand(run)]
    assert covered == list(unit_ids(snapshot))  # every slot (page) once, in order
    changed = changed_units(tl, step)
    for run in runs:
        for unit in expand(run):
            assert states.get(unit, "free") == run.attrs["data-state"]
            assert (unit in changed) == (run.attrs["data-changed"] == "true")
    # states against the snapshot itself, not only unit_states
    page_size = snapshot.page_size
    for node in snapshot.nodes[1:]:
        for unit in node.pages if page_size > 1 else node.value:
            assert states[unit] == ("protected" if node.lock_ref > 0 else "evictable")
    free = snapshot.free_pages if page_size > 1 else snapshot.free_slots
    listed = [
        u
        for e in shown.find_all(data_testid="free-slots")[0].with_attr("data-first")
        for u in expand(e)
    ]
    assert listed == list(free)  # the allocator's order, front first
    sizes = shown.find_all(data_testid="sizes")[0]
    assert sizes.attrs["data-evictable"] == str(snapshot.evictable_size)
    assert sizes.attrs["data-protected"] == str(snapshot.protected_size)
    assert sizes.attrs["data-free"] == str(len(snapshot.free_slots))
    text = re.sub(r"\s+", " ", sizes.text)
    assert f"evictable_size {snapshot.evictable_size:,}" in text
    assert f"protected_size {snapshot.protected_size:,}" in text
    if step > 0:
        facts = tl.steps[step].facts
        touched = {s // page_size if page_size > 1 else s for s in (*facts.allocated, *facts.freed)}
        assert touched <= changed


# -- requests, counters, log, narration, header ---------------------------------------------


@pytest.mark.parametrize(("name", "mode", "page", "step"), every_step())
def test_requests_counters_log_and_narration_are_the_snapshot(
    name: str, mode: str, page: int | None, step: int
) -> None:
    tl = timeline(name, mode, page)
    current = tl.steps[step]
    snapshot = current.snapshot
    rows = parse(render_sglang_requests(tl, step)).with_attr("data-request-id")
    assert [
        (
            r.attrs["data-request-id"],
            r.attrs["data-status"],
            r.attrs["data-hit"],
            r.attrs["data-locked"],
            ints(r.attrs["data-slots"]),
        )
        for r in rows
    ] == [
        (
            r.request_id,
            r.status,
            str(r.hit_tokens),
            "" if r.locked_node is None else str(r.locked_node),
            list(r.kv_row),
        )
        for r in snapshot.requests
    ]
    waiting = parse(render_sglang_requests(tl, step)).find_all(data_testid="waiting")[0].text
    assert [w.split(" (")[0] for w in waiting.removeprefix("waiting: ").split(", ")] == (
        list(snapshot.waiting) or ["none"]
    )
    metrics = parse(render_sglang_metrics(tl, step)).find_all(data_testid="metrics")[0]
    c = snapshot.counters
    assert (
        metrics.attrs["data-queries"],
        metrics.attrs["data-hits"],
        metrics.attrs["data-splits"],
    ) == (
        str(c.queries),
        str(c.hits),
        str(c.splits),
    )
    events = parse(render_sglang_metrics(tl, step)).with_attr("data-type")
    assert [e.attrs["data-type"] for e in events] == [e.type for e in snapshot.events]
    log = parse(render_log(tl, step)).find_all(data_testid="log")[0]
    lines = [e.text for e in log.iter() if e.attrs.get("class", "").startswith("line")]
    assert lines == [str(line) for line in tl.logs_until(step)]
    narration = plain(render_narration(tl, step))
    assert " ".join(tl.narration_text(current).split()) in narration


def test_sglang_narration_links_sglang_terms_and_vllm_text_does_not() -> None:
    tl = timeline("shared-prefix", "fcfs")
    links = {e.attrs["data-term"] for e in parse(render_narration(tl, 4)).with_attr("data-term")}
    assert {"split", "node"} <= links
    sglang_terms = {k for k, t in glossary.glossary().items() if t.engine == "sglang"}
    assert (
        not {
            e.attrs["data-term"]
            for e in parse(glossary.link_terms("a split node, lock_ref")).with_attr("data-term")
        }
        & sglang_terms
    )


def test_every_sglang_term_is_linked_by_the_sglang_views() -> None:
    views = (
        render_radix_tree,
        render_kv_slots,
        render_sglang_requests,
        render_sglang_metrics,
        render_narration,
        render_sglang_header,
    )
    linked: set[str] = set()
    for name, mode, page in every_timeline():
        tl = timeline(name, mode, page)
        for step in range(len(tl.steps)):
            for view in views:
                linked |= {
                    e.attrs["data-term"] for e in parse(view(tl, step)).with_attr("data-term")
                }
    sglang_terms = {k for k, t in glossary.glossary().items() if t.engine == "sglang"}
    assert sglang_terms <= linked
    assert len(sglang_terms) >= 7


def test_the_header_names_sglangs_radix_cache() -> None:
    tl = timeline("shared-prefix", "fcfs")
    assert "SGLang's prefix cache · RadixCache of 60 KV slots · page size 1" in plain(
        render_sglang_embed_header(tl, 0)
    )
    assert "block hashes" not in plain(render_sglang_embed_header(tl, 0))  # vLLM's sentence
    assert "SGLang 0.5.23 RadixCache · fcfs" in plain(render_sglang_header(tl, 0))
    paged = timeline("unaligned-prefix", "fcfs", 4)
    assert "page size 4" in plain(render_sglang_embed_header(paged, 0))


# -- large trees --------------------------------------------------------------------------


def large_scenario(seed: int, requests: int = 240, chain: int = 40) -> Scenario:
    """Hundreds of nodes: prompts branching three levels deep, and a chain of prompts
    each one token longer than the last (a deep chain of single children)."""
    rng = random.Random(seed)
    steps: list[dict[str, Any]] = []
    for i in range(requests):
        prompt = [100 + rng.randrange(6), 200 + rng.randrange(8), 1000 + i, 5000 + i]
        steps.append({"do": "add_request", "id": f"R{i}", "prompt": prompt, "max_tokens": 1})
        if i % 10 == 9:
            steps.append({"do": "step", "count": 2})
    for i in range(chain):
        prompt = [7, *range(8, 8 + i + 2)]
        steps += [
            {"do": "add_request", "id": f"C{i}", "prompt": prompt, "max_tokens": 1},
            {"do": "step", "count": 2},
        ]
    steps.append({"do": "run_until_idle"})
    data = {
        "engines": ["vllm", "sglang"],
        "pool": {"num_gpu_blocks": 1000, "block_size": 4},
        "sglang": {"modes": ["fcfs"], "num_slots": 4000},
        "steps": steps,
    }
    return parse_scenario("large", data)


@cache
def large_timeline(seed: int = 0) -> SGLangTimeline:
    return build_sglang_timeline(large_scenario(seed), "fcfs", trace=False)


# A step of a tree of hundreds of nodes: at most this many characters.
TREE_BUDGET = 60_000
SLOTS_BUDGET = 20_000


def test_a_large_tree_folds_within_a_budget() -> None:
    tl = large_timeline()
    last = len(tl.steps) - 1
    snapshot = tl.steps[last].snapshot
    assert len(snapshot.nodes) > 300
    html = render_radix_tree(tl, last)
    assert len(html) < TREE_BUDGET
    shown = parse(html)
    drawn = shown.with_attr("data-node-id")
    assert len(drawn) <= MAX_NODES
    folds = shown.with_attr("data-fold")
    assert folds and sum(int(f.attrs["data-hidden"]) for f in folds) + len(drawn) == len(
        snapshot.nodes
    )
    assert {f.attrs["data-fold"] for f in folds} >= {"children"}
    assert f"{len(snapshot.nodes) - 1:,} nodes" in plain(html)
    assert f"{len(drawn) - 1} of them drawn" in plain(html)
    assert len(render_kv_slots(tl, last)) < SLOTS_BUDGET


def test_a_deep_chain_folds() -> None:
    tl = large_timeline()
    # the chain's last request ran: its path is C0's node, then one node per request
    step = max(i for i, s in enumerate(tl.steps) if s.facts.walks_of("C39", "admit"))
    shown = parse(render_radix_tree(tl, step))
    chains = [f for f in shown.with_attr("data-fold") if f.attrs["data-fold"] == "chain"]
    assert chains
    walked = [
        int(e.attrs["data-node-id"])
        for e in shown.with_attr("data-node-id")
        if "walked" in e.attrs["data-marks"]
    ]
    path = tl.steps[step].facts.walks_of("C39", "admit")[0].path
    assert len(path) > 30
    # the match path: its ends drawn, its middle counted in the chain's line
    assert walked[0] == path[0] and walked[-1] == path[-1] and set(walked) <= set(path)
    assert len(walked) + sum(int(f.attrs["data-walked"]) for f in chains) == len(path)
    assert "on the match path" in chains[0].text
    assert len(shown.with_attr("data-node-id")) <= MAX_NODES


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.integers(20, 200), st.integers(0, 30))
def test_random_large_trees_keep_every_node_counted(seed: int, requests: int, chain: int) -> None:
    tl = build_sglang_timeline(large_scenario(seed, requests, chain), "fcfs", trace=False)
    for step in (len(tl.steps) // 2, len(tl.steps) - 1):
        snapshot = tl.steps[step].snapshot
        html = render_radix_tree(tl, step)
        assert len(html) < TREE_BUDGET
        shown = parse(html)
        drawn = [int(e.attrs["data-node-id"]) for e in shown.with_attr("data-node-id")]
        hidden = sum(int(f.attrs["data-hidden"]) for f in shown.with_attr("data-fold"))
        assert len(drawn) + hidden == len(snapshot.nodes)
        assert len(set(drawn)) == len(drawn) and drawn[0] == ROOT_ID
        # a drawn node's parent is drawn, or folded into the chain line above it
        order = [n.node_id for n in snapshot.nodes]
        assert drawn == [n for n in order if n in set(drawn)]
