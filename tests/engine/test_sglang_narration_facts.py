"""Every SGLang narration, in every scenario, mode and step, states only what that step's
data shows: node ids, slots and counts are placeholders filled from the step
(engine/lab/play/sglang/narration.py), and what the tree did is named at its step."""

from __future__ import annotations

import re
from functools import cache

import pytest

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.sglang.facts import SGLangStepFacts
from engine.lab.play.sglang.narration import (
    NodeList,
    SlotList,
    describe_sglang_step,
    fill_sglang_narration,
)
from engine.lab.play.sglang.timeline import SGLangStep, SGLangTimeline, build_sglang_timeline
from tests.engine.test_narration_facts import ALLOWED_DIGITS

CASES = [
    (name, mode, index)
    for name in scenario_names("sglang")
    for mode in load_scenario(name).sglang.modes
    for index in range(len(load_scenario(name).script) + 1)
]

NODE = re.compile(r"\bn(\d+)\b")
SLOTS = re.compile(r"\b(slots?|pages?) ((?:\d+(?: to \d+)?(?:, | and )?)+)")
# "two nodes", "three slots": a count of the tree's things must be a placeholder
COUNTED = re.compile(
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten)\s+(?:\w+\s+)?"
    r"(?:nodes?|slots?|tokens?|pages?|leaves)\b",
    re.I,
)


@cache
def timeline(name: str, mode: str) -> SGLangTimeline:
    return build_sglang_timeline(load_scenario(name), mode, trace=False)


def step_of(name: str, mode: str, index: int) -> tuple[SGLangTimeline, SGLangStep]:
    t = timeline(name, mode)
    return t, t.steps[index]


def flat(text: str) -> str:
    return " ".join(text.split())


def named_nodes(text: str) -> set[int]:
    return {int(n) for n in NODE.findall(text)}


def named_slots(text: str) -> dict[str, set[int]]:
    named: dict[str, set[int]] = {"slot": set(), "page": set()}
    for word, listed in SLOTS.findall(text):
        for part in re.split(r", | and ", listed):
            if not part:
                continue
            first, _, last = part.partition(" to ")
            named[word.rstrip("s")].update(range(int(first), int(last or first) + 1))
    return named


def test_every_sglang_scenario_has_a_text_for_every_step() -> None:
    for name in scenario_names("sglang"):
        scenario = load_scenario(name)
        for mode in scenario.sglang.modes:
            texts = scenario.sglang.narration_for(mode)
            for step in timeline(name, mode).steps:
                assert texts.get(step.narration_key, "").strip(), (name, mode, step.narration_key)


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_template_writes_no_node_slot_or_count_by_hand(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    template = flat(t.narration_template(step))
    assert not NODE.search(template), f"{name} [{mode}] step {index}: a node id by hand"
    request_ids = [r.request_id for r in step.snapshot.requests]
    names = re.compile("|".join(rf"\b{re.escape(r)}\b" for r in request_ids) or "$^")
    template = re.sub(r"\bSGLang \d+\.\d+\.\d+", "", template)
    stray = re.findall(r"\d[\d,]*", names.sub("", ALLOWED_DIGITS.sub("", template)))
    assert not stray, f"{name} [{mode}] step {index}: numbers {stray} written by hand"
    assert not COUNTED.search(t.narration_text(step)), f"{name} [{mode}] step {index}"


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_every_placeholder_is_filled(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    text = t.narration_text(step)
    assert not re.search(r"\{[A-Za-z_][\w.\-\[\]:,]*\}", text), f"{name} [{mode}] {index}: {text}"


@pytest.mark.parametrize(("name", "mode", "index"), CASES)
def test_named_nodes_and_slots_are_in_the_step(name: str, mode: str, index: int) -> None:
    t, step = step_of(name, mode, index)
    snapshot, facts = step.snapshot, step.facts
    nodes = {n.node_id for n in snapshot.nodes} | set(facts.evicted)
    nodes |= {n for w in facts.walks for n in w.path} | set(facts.split_nodes)
    text = flat(t.narration_text(step))
    assert named_nodes(text) <= nodes, f"{name} [{mode}] step {index}: {text}"
    slots = set(range(1, snapshot.num_slots + 1))
    named = named_slots(text)
    assert named["slot"] <= slots and named["page"] <= {s // snapshot.page_size for s in slots}


@pytest.mark.parametrize(("name", "mode", "index"), [c for c in CASES if c[2]])
def test_what_the_tree_did_is_named_at_its_step(name: str, mode: str, index: int) -> None:
    """A node evicted, split off or inserted, and a slot taken and given back within the
    step, are named by the step's own text."""
    t, step = step_of(name, mode, index)
    facts = step.facts
    text = flat(t.narration_text(step))
    named = named_nodes(text)
    for kind, ids in (
        ("evicted", facts.evicted),
        ("split", facts.split_nodes),
        ("inserted", facts.inserted),
    ):
        assert set(ids) <= named, f"{name} [{mode}] step {index}: {kind} {ids} not named: {text}"
    if facts.evictions:
        assert re.search(r"evict", text, re.I)
    if facts.splits:
        assert re.search(r"split", text, re.I)
    missing = set(facts.taken_and_freed) - named_slots(text)["slot"]
    assert not missing or step.snapshot.page_size > 1, f"{name} [{mode}] {index}: {missing}"


def test_placeholders_fill_nodes_slots_and_requests() -> None:
    _, step = step_of("shared-prefix", "fcfs", 4)
    text = fill_sglang_narration(
        "{split} over {split_children}; {allocated}; {S2.hit_tokens} of {S2.prompt_tokens}; "
        "walk {S2.walk}; {locked.count} locked; {admitted}; {nobody.x} {S2.nothing}",
        step.facts,
        step.snapshot,
    )
    assert text == (
        "n2 over n1; slots 23 to 28; 16 of 22; walk n2; 3 locked; S2; {nobody.x} {S2.nothing}"
    )


def test_a_prefill_step_names_who_sat_out_and_a_decode_step_who_decoded() -> None:
    # shared-prefix: step 4 prefills S2 alone while S1 runs; step 5 decodes both
    template = "{admitted} | {sat_out} | {decoded} | {S1.output_tokens} of {S1.max_new_tokens}"
    _, prefill = step_of("shared-prefix", "fcfs", 4)
    assert prefill.facts.forward_mode == "prefill"
    assert (
        fill_sglang_narration(template, prefill.facts, prefill.snapshot)
        == "S2 | S1 | none | 1 of 3"
    )
    t, decode = step_of("shared-prefix", "fcfs", 5)
    assert decode.facts.forward_mode == "decode"
    assert fill_sglang_narration(template, decode.facts, decode.snapshot) == (
        "none | none | S1 and S2 | 2 of 3"
    )
    # a step nobody wrote a text for says the same
    described = flat(describe_sglang_step(prefill.facts, t.steps[3].snapshot, prefill.snapshot))
    assert "did not decode" in fill_sglang_narration(described, prefill.facts, prefill.snapshot)
    described = describe_sglang_step(decode.facts, prefill.snapshot, decode.snapshot)
    assert "the running batch decoded: S1 and S2." in flat(
        fill_sglang_narration(described, decode.facts, decode.snapshot)
    )


def test_lists_read_as_lists() -> None:
    assert str(NodeList([])) == "no node" and str(NodeList([0, 4])) == "the root and n4"
    assert str(SlotList([])) == "no slot" and str(SlotList([5])) == "slot 5"
    assert str(SlotList([1, 2, 3, 7, 8, 12])) == "slots 1 to 3, 7, 8 and 12"
    assert str(SlotList([8, 9, 10, 11, 12, 13, 14, 15], page_size=4)) == "pages 2 and 3"
    assert named_slots("slots 1 to 3, 7, 8 and 12")["slot"] == {1, 2, 3, 7, 8, 12}
    assert SGLangStepFacts(order=(("freed", 5), ("allocated", 5))).taken_and_freed == ()
    assert SGLangStepFacts(order=(("allocated", 5), ("freed", 5))).taken_and_freed == (5,)


def test_a_wrong_node_in_a_text_is_caught() -> None:
    _, step = step_of("eviction-order", "fcfs", 8)
    known = {n.node_id for n in step.snapshot.nodes} | set(step.facts.evicted)
    assert 99 not in known and named_nodes("then n99 goes") == {99}
    assert COUNTED.search("two nodes are evicted")
