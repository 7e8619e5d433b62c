"""A playground on both engines, no browser: store, timelines, the editor's SGLang choice."""

from __future__ import annotations

from app.data import timelines
from app.playground import store
from app.playground.store import EMPTY
from app.views.editor import fork
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.sglang.timeline import (
    SGLangTimeline,
    build_sglang_timeline,
    count_sglang_steps,
)
from engine.lab.play.vllm.timeline import Timeline
from tests.app.test_playground import edit, playground_app

# prompt logprobs are vLLM's only; a LoRA adapter plays on both (its id joins the extra_key)
VLLM_ONLY_SCRIPT = "add_request A prompt_logprobs=1 prompt: 1..8\nstep"
LORA_SCRIPT = "add_request A lora_name=adapter prompt: 1..8\nstep"


def test_a_both_engine_playground_has_sglang_timelines_beside_vllms() -> None:
    name = store.register(fork("shared-prefix")).scenario.name
    assert timelines.modes(name)[-2:] == ("fcfs", "lpm")
    scenario = store.get(name).scenario
    counted = store.last_step(name, "lpm")  # before any timeline is built
    assert counted == count_sglang_steps(scenario, "lpm")
    built = timelines.timeline(name, "lpm")
    assert isinstance(built, SGLangTimeline)
    assert built == build_sglang_timeline(scenario, "lpm")
    assert len(built.steps) - 1 == counted
    assert isinstance(timelines.timeline(name, timelines.modes(name)[0]), Timeline)


def test_a_fork_of_a_scenario_on_sglang_opens_on_sglang_at_the_same_step() -> None:
    app = playground_app("?scenario=shared-prefix&mode=lpm&step=3")
    app.playground.open_fork()
    state = app.state
    assert store.is_playground(state.scenario)
    assert (state.mode, state.step) == ("lpm", 3)
    assert isinstance(state.timeline, SGLangTimeline)
    assert app.page.editor["fields"]["sglang"] is True  # the page's box, ticked
    assert f"{state.scenario}/fcfs" in state.lasts  # the picker offers every SGLang policy
    assert "mode=lpm" in app.query


def test_an_edit_on_sglang_rebuilds_sglangs_timeline() -> None:
    app = playground_app("?scenario=shared-prefix&mode=fcfs&step=2")
    app.playground.open_fork()
    before = app.state.timeline
    edit(app, "script", "add_request X prompt: 1..20\nstep\nadd_request Y prompt: 1..16, 99\nstep")
    state = app.state
    assert state.mode == "fcfs" and state.timeline is not before
    expected = build_sglang_timeline(scenario_from_dict(app.playground._data), "fcfs")
    assert state.timeline == expected
    assert state.step == 2


def test_also_on_sglang_adds_both_policies_and_unticking_returns_to_vllm() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    assert app.page.editor["fields"]["sglang"] is False
    assert app.state.modes == store.get(app.state.scenario).scenario.modes  # vLLM's only
    edit(app, "sglang", True)
    assert app.playground._data["engines"] == ["vllm", "sglang"]
    assert app.state.modes[-2:] == ("fcfs", "lpm")
    app.state.mode = "lpm"
    assert isinstance(app.state.timeline, SGLangTimeline)
    edit(app, "sglang", False)
    assert "fcfs" not in app.state.modes
    assert isinstance(app.state.timeline, Timeline)  # back on vLLM's first mode


def test_a_script_sglang_cannot_play_says_why_next_to_the_choice() -> None:
    app = playground_app()
    app.playground.load(EMPTY)
    edit(app, "sglang", True)
    said = edit(app, "script", VLLM_ONLY_SCRIPT)
    assert "Cannot play on SGLang" in said["engines"] and "prompt_logprobs" in said["engines"]
    assert said["script"] == ""  # it plays on vLLM
    assert "fcfs" not in app.state.modes and isinstance(app.state.timeline, Timeline)
    assert app.playground.fields["sglang"] is True  # the learner's choice stays, with its message
    said = edit(app, "script", "add_request A prompt: 1..8\nstep")
    assert said["engines"] == "" and app.state.modes[-2:] == ("fcfs", "lpm")
    said = edit(app, "script", LORA_SCRIPT)
    assert said["engines"] == "" and app.state.modes[-2:] == ("fcfs", "lpm")
