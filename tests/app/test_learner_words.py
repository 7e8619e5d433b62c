"""Words a learner cannot follow from the page: "the chapter" or "the seed" (documents
the learner never saw) and a command-line flag (the page has no such control). Every
text a page shows is scanned: each step's narration on both engines, scenario titles,
summaries and taglines, the glossary, the start page and the workload presets' outcomes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

import pytest

from app.render.glossary import render_glossary
from app.render.start_page import render_start_page
from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.sglang.timeline import build_sglang_timeline
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.workload.presets import load_preset, preset_names

CHAPTER = re.compile(r"\bchapters?\b", re.I)
# the hash seed of NONE_HASH (PYTHONHASHSEED) is the engine's, and the glossary says what
# it is; any other seed is a document the learner has not seen
SEED = re.compile(r"\bseed(?:'s)?\b", re.I)
FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]*")


def unfollowable(text: str) -> list[str]:
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
        seed = SEED.search(sentence) and "PYTHONHASHSEED" not in sentence
        if CHAPTER.search(sentence) or FLAG.search(sentence) or seed:
            found.append(sentence)
    return found


def scenario_texts(name: str) -> Iterator[tuple[str, str]]:
    scenario = load_scenario(name)
    yield "title", scenario.title
    yield "summary", scenario.summary
    for mode in scenario.modes:
        t = build_timeline(scenario, mode, trace=False)
        for step in t.steps:
            yield f"{mode} step {step.index}", t.narration_text(step)
    if "sglang" in scenario.engines:
        for mode in scenario.sglang.modes:
            yield f"sglang {mode} tagline", scenario.sglang.narration_for(mode).get("tagline", "")
            s = build_sglang_timeline(scenario, mode, trace=False)
            for step in s.steps:
                yield f"sglang {mode} step {step.index}", s.narration_text(step)


@pytest.mark.parametrize("name", scenario_names())
def test_no_scenario_text_names_what_the_learner_cannot_follow(name: str) -> None:
    bad = [(where, s) for where, text in scenario_texts(name) for s in unfollowable(text)]
    assert not bad, f"{name}: {bad}"


def test_the_glossary_and_the_start_page_name_nothing_the_learner_cannot_follow() -> None:
    titles = {name: load_scenario(name).title for name in scenario_names()}
    page = render_start_page(titles, "?scenario=playground", "?lab=shared-prefix")
    for html in (render_glossary(open_=True), page):
        text = re.sub(r"<[^>]+>", " ", html)
        assert not unfollowable(text), unfollowable(text)


@pytest.mark.parametrize("name", preset_names())
def test_no_preset_outcome_names_what_the_learner_cannot_follow(name: str) -> None:
    preset = load_preset(name)
    texts = [str(v) for v in dataclasses.asdict(preset).values() if isinstance(v, str)]
    bad = [s for text in texts for s in unfollowable(text)]
    assert not bad, f"{name}: {bad}"


def test_the_scan_finds_each_kind() -> None:
    assert unfollowable("As the chapter says. Fine.") == ["As the chapter says."]
    assert unfollowable("The seed's load is 20/s.") == ["The seed's load is 20/s."]
    assert unfollowable("Try --page-size 4 there.") == ["Try --page-size 4 there."]
    assert not unfollowable("The seed is PYTHONHASHSEED if it is set.")
    assert not unfollowable("An em dash -- like this, and a-b--c.")
