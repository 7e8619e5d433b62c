"""Predict, then see, on SGLang: every question is answered by the next step's facts,
and offers the answer a learner would give without the lesson."""

from __future__ import annotations

import pytest

from app.data import timelines
from engine.lab.play.questions import MAX_HIT_QUESTIONS, Question, questions_at
from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.sglang.timeline import SGLangTimeline

CASES = [
    (name, mode) for name in scenario_names("sglang") for mode in load_scenario(name).sglang.modes
]


def sglang_timeline(name: str, mode: str) -> SGLangTimeline:
    timeline = timelines.timeline(name, mode)
    assert isinstance(timeline, SGLangTimeline)
    return timeline


def asked(timeline: SGLangTimeline) -> list[tuple[int, Question]]:
    return [(s, q) for s in range(len(timeline.steps)) for q in questions_at(timeline, s)]


@pytest.mark.parametrize(("name", "mode"), CASES)
def test_every_answer_is_what_the_next_step_shows(name: str, mode: str) -> None:
    timeline = sglang_timeline(name, mode)
    for step, q in asked(timeline):
        after = timeline.steps[step + 1]
        right = q.options[q.answer]
        assert len(set(q.options)) == len(q.options) >= 2, (name, step, q.options)
        if q.kind == "sglang_hit_tokens":
            rid = q.prompt.split()[0]
            request = next(r for r in after.snapshot.requests if r.request_id == rid)
            assert rid in after.facts.admitted
            assert right.split()[0] == str(request.hit_tokens)
        elif q.kind == "sglang_split":
            cut = int(right.split(":")[0].removeprefix("n"))
            assert cut in {s.child for s in after.facts.splits}
        elif q.kind == "sglang_flush":
            assert right.endswith(f"returns {after.result}")
        else:
            assert q.kind == "sglang_evicted"
            assert right.startswith(f"n{after.facts.evictions[0].node}:")
    assert questions_at(timeline, len(timeline.steps) - 1) == ()


def question(name: str, kind: str, about: str = "", mode: str = "fcfs") -> Question:
    for _, q in asked(sglang_timeline(name, mode)):
        if q.kind == kind and q.prompt.startswith(about):
            return q
    raise AssertionError(f"no {kind} question {about!r} in {name}")


def test_each_lesson_is_asked_with_its_tempting_answer() -> None:
    cases = [  # scenario, request, the answer, what a learner would say without the lesson
        ("eviction-order", "R3", "4 tokens", "5 tokens"),  # the whole prompt: a match stops short
        ("cache-salt", "bob-1", "0 tokens", "16 tokens"),  # alice-2's hit, another namespace
        ("cache-salt", "fresh-2", "0 tokens", "16 tokens"),
        ("lora-adapter", "chat-1", "0 tokens", "16 tokens"),  # sql-2's hit, another adapter
        ("unaligned-prefix", "U2", "10 tokens", "15 tokens"),
    ]
    for name, rid, right, tempting in cases:
        q = question(name, "sglang_hit_tokens", f"{rid} ")
        assert q.options[q.answer] == right and tempting in q.options, (name, rid, q.options)


def test_which_node_splits_and_which_leaf_goes_are_asked() -> None:
    split = question("eviction-order", "sglang_split", "R3")
    assert split.options[split.answer].startswith("n1:")  # R1's node, cut at R3's match
    evicted = question("eviction-order", "sglang_evicted")
    # R2's leaf goes, not R1's older-looking tail nor the locked parent
    assert evicted.options[evicted.answer].startswith("n2:")
    assert any("locked" in option for option in evicted.options)


def test_a_flush_right_after_the_last_request_is_asked_and_refused() -> None:
    timeline = sglang_timeline("flush-cache", "fcfs")
    flushes = [(s, q) for s, q in asked(timeline) if q.kind == "sglang_flush"]
    answers = [q.options[q.answer] for _, q in flushes]
    assert answers == ["No: it returns False", "No: it returns False", "Yes: it returns True"]
    # the second: nothing waits or runs, yet the last batch still holds A
    step = flushes[1][0]
    assert not timeline.steps[step].snapshot.running and not timeline.steps[step].snapshot.waiting


def test_a_long_batch_asks_about_a_few_requests_those_that_hit_first() -> None:
    vllm = timelines.timeline("lpm-fallback", "default")
    assert len(questions_at(vllm, 0)) == MAX_HIT_QUESTIONS  # of 15 admitted
    lpm = sglang_timeline("lpm-fallback", "lpm")
    hits = [q for q in questions_at(lpm, 1) if q.kind == "sglang_hit_tokens"]
    assert len(hits) == MAX_HIT_QUESTIONS and hits[0].prompt.startswith("W ")
    assert hits[0].options[hits[0].answer] == "8 tokens"
