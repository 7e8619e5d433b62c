"""Playground scenarios the app has seen, by name, so the timelines module can serve them.

A playground's name is a hash of its data (engine/lab/play/scenario_file.py), so an entry
never changes and can be shared by every session; the oldest are dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.lab.play import playground_code
from engine.lab.play.scenario import SGLANG_MODES, ActionPlace, Scenario, check_mode, mode_effect
from engine.lab.play.scenario_file import PLAYGROUND_PREFIX, scenario_from_dict
from engine.lab.play.sglang.timeline import (
    SGLangTimeline,
    build_sglang_timeline,
    count_sglang_steps,
)
from engine.lab.play.vllm.timeline import Timeline, build_timeline, count_steps

MAX_KEPT = 32
# The empty playground: the editor's "Start empty", and `?scenario=playground` alone.
EMPTY: dict[str, Any] = {
    "title": "My scenario",
    "pool": {"num_gpu_blocks": 10, "block_size": 4},
    "steps": [
        {"do": "add_request", "id": "A", "prompt": "1..12", "max_tokens": 2},
        {"do": "step"},
    ],
}


@dataclass(frozen=True)
class Playground:
    data: Mapping[str, Any]  # in the content/scenarios format
    scenario: Scenario
    code: str  # what ?playground= carries


_kept: OrderedDict[str, Playground] = OrderedDict()
_timelines: OrderedDict[tuple[str, str], Timeline | SGLangTimeline] = OrderedDict()
_last_steps: OrderedDict[tuple[str, object], int] = OrderedDict()  # by (name, mode_effect)


def _keep(cache: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > MAX_KEPT:
        cache.popitem(last=False)


def is_playground(name: str) -> bool:
    return name.startswith(PLAYGROUND_PREFIX)


def register(data: Mapping[str, Any], where: ActionPlace | None = None) -> Playground:
    """Check ``data`` (ScenarioError if it cannot be played) and keep it under its name;
    ``where`` names an action in a message (the editor's lines)."""
    scenario = scenario_from_dict(data, where)
    found = _kept.get(scenario.name)
    if found is None:
        found = Playground(data, scenario, playground_code.encode(data))
    _keep(_kept, scenario.name, found)
    return found


def get(name: str) -> Playground:
    return _kept[name]


def build(scenario: Scenario, mode: str, trace: bool = True) -> Timeline | SGLangTimeline:
    """A mode's timeline: SGLang's schedule policies (SGLANG_MODES) play on SGLang's model
    (the scenario must list it in ``engines``), any other mode on vLLM's."""
    if mode in SGLANG_MODES:
        return build_sglang_timeline(scenario, mode, trace)
    return build_timeline(scenario, mode, trace)


def timeline(name: str, mode: str) -> Timeline | SGLangTimeline:
    """A playground mode's timeline (build), kept."""
    key, scenario = (name, mode), get(name).scenario
    built = _timelines.get(key) or build(scenario, mode)
    _keep(_timelines, key, built)
    _keep(_last_steps, _count_key(name, mode), len(built.steps) - 1)
    return built


def _count_key(name: str, mode: str) -> tuple[str, object]:
    """What a mode's step count depends on: vLLM modes with the same effect share one
    (engine/lab/play/scenario.py mode_effect); an SGLang policy is its own."""
    if mode in SGLANG_MODES:
        return name, mode
    scenario = get(name).scenario
    return name, mode_effect(scenario, check_mode(scenario, mode))


def last_step(name: str, mode: str) -> int:
    """The last step of a mode's timeline without building it: the step controls need it
    for modes not shown yet. A mode that plays as a mode already played has its count
    (engine/lab/play/scenario.py mode_effect); another is counted by a run that records
    nothing (a few ms)."""
    scenario, key = get(name).scenario, _count_key(name, mode)
    if key not in _last_steps:
        sglang = mode in SGLANG_MODES
        count = count_sglang_steps(scenario, mode) if sglang else count_steps(scenario, mode)
        _keep(_last_steps, key, count)
    return _last_steps[key]


def counted_last_step(name: str, mode: str) -> int | None:
    """The mode's last step if known without playing it (built, or counted before, or
    sharing its count with a mode that was: last_step), else None."""
    return _last_steps.get(_count_key(name, mode))
