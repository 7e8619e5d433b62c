"""Where the app gets its timelines: the engine, memoised per (scenario, mode).

A scenario that plays on SGLang too (``engines``) has SGLang's timelines beside vLLM's,
one per schedule policy in ``[sglang] modes`` ("fcfs", "lpm"): those names are no vLLM
mode's, so (scenario, mode) names one timeline of either engine.
A playground scenario (the learner's own, app/playground/) is served by name too, on
the engines its data lists, as a built-in one.

A Timeline is immutable, so one copy can serve every session of `panel serve`.
"""

from __future__ import annotations

from functools import cache

from app.playground import store as playground
from app.render.engines import AnyTimeline
from engine.lab.play.scenario import SGLANG_MODES, Scenario, load_scenario, scenario_names

DEFAULT_SCENARIO = "reset"


def scenario(name: str) -> Scenario:
    return playground.get(name).scenario if playground.is_playground(name) else _built_in(name)


def timeline(name: str, mode: str) -> AnyTimeline:
    if playground.is_playground(name):
        return playground.timeline(name, mode)
    return _built_in_timeline(name, mode)


def last_step(name: str, mode: str) -> int:
    """The last step of a timeline; a playground's without building its traced timeline."""
    if playground.is_playground(name):
        return playground.last_step(name, mode)
    return len(_built_in_timeline(name, mode).steps) - 1


@cache
def _built_in(name: str) -> Scenario:
    return load_scenario(name)


@cache
def _built_in_timeline(name: str, mode: str) -> AnyTimeline:
    return playground.build(scenario(name), mode)


def lasts(name: str) -> dict[str, int]:
    """Timeline key -> last step of every mode of a scenario (a playground's unbuilt)."""
    return {f"{name}/{mode}": last_step(name, mode) for mode in modes(name)}


def engine_of(mode: str) -> str:
    """The engine a mode plays on: SGLang's schedule policies, else vLLM."""
    return "sglang" if mode in SGLANG_MODES else "vllm"


def modes(name: str) -> tuple[str, ...]:
    """Every timeline's mode of a scenario: vLLM's, then SGLang's if it plays there."""
    played = scenario(name)
    if "sglang" not in played.engines:
        return played.modes
    return played.modes + played.sglang.modes


def timeline_key(timeline: AnyTimeline) -> str:
    """Names a timeline in the browser: "scenario/mode" (a scenario name has no "/")."""
    return f"{timeline.scenario}/{timeline.mode}"


def split_key(key: str) -> tuple[str, str]:
    """(scenario, mode) of a timeline key; empty strings where the key has none."""
    scenario, _, mode = key.partition("/")
    return scenario, mode


def of_scenario(name: str) -> tuple[AnyTimeline, ...]:
    """Every mode's timeline of a scenario, on every engine it plays on (modes)."""
    return tuple(timeline(name, mode) for mode in modes(name))


def names() -> list[str]:
    return list(scenario_names())


def titles() -> dict[str, str]:
    """Each built-in scenario's title, by its name."""
    return {name: scenario(name).title for name in names()}


def default_scenario() -> str:
    available = names()
    return DEFAULT_SCENARIO if DEFAULT_SCENARIO in available else available[0]
