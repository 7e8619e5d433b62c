"""Playground scenarios the app has seen, by name, so the timelines module can serve them.

A playground's name is a hash of its data (engine/lab/scenario_file.py), so an entry
never changes and can be shared by every session; the oldest are dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.lab import playground_code
from engine.lab.scenario import Scenario
from engine.lab.scenario_file import PLAYGROUND_PREFIX, scenario_from_dict
from engine.lab.timeline import Timeline, build_timeline, count_steps

MAX_KEPT = 32


@dataclass(frozen=True)
class Playground:
    data: Mapping[str, Any]  # in the content/scenarios format
    scenario: Scenario
    code: str  # what ?playground= carries


_kept: OrderedDict[str, Playground] = OrderedDict()
_timelines: OrderedDict[tuple[str, str], Timeline] = OrderedDict()
_last_steps: OrderedDict[tuple[str, str], int] = OrderedDict()


def _keep(cache: OrderedDict[Any, Any], key: Any, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > MAX_KEPT:
        cache.popitem(last=False)


def is_playground(name: str) -> bool:
    return name.startswith(PLAYGROUND_PREFIX)


def register(data: Mapping[str, Any]) -> Playground:
    """Check ``data`` (ScenarioError if it cannot be played) and keep it under its name."""
    scenario = scenario_from_dict(data)
    found = _kept.get(scenario.name)
    if found is None:
        found = Playground(data, scenario, playground_code.encode(data))
    _keep(_kept, scenario.name, found)
    return found


def get(name: str) -> Playground:
    return _kept[name]


def timeline(name: str, mode: str) -> Timeline:
    key = (name, mode)
    built = _timelines.get(key) or build_timeline(get(name).scenario, mode)
    _keep(_timelines, key, built)
    return built


def last_step(name: str, mode: str) -> int:
    """The last step of a mode's timeline, from a run that records nothing (a few ms)
    unless the timeline is at hand: the step controls need it for modes not shown yet."""
    key = (name, mode)
    if key not in _last_steps:
        built = _timelines.get(key)
        count = len(built.steps) - 1 if built else count_steps(get(name).scenario, mode)
        _keep(_last_steps, key, count)
    return _last_steps[key]
