"""A built-in scenario's timelines, untraced and built once, and a step by its
narration key: what the tests of one scenario's lessons read."""

from __future__ import annotations

from functools import cache

from engine.lab.play.scenario import load_scenario
from engine.lab.play.sglang.timeline import SGLangTimeline, build_sglang_timeline
from engine.lab.play.vllm.timeline import Timeline, build_timeline


@cache
def vllm_timeline(name: str, mode: str = "default") -> Timeline:
    return build_timeline(load_scenario(name), mode, trace=False)


@cache
def sglang_timeline(name: str, mode: str = "fcfs") -> SGLangTimeline:
    return build_sglang_timeline(load_scenario(name), mode, trace=False)


def step_index(timeline: Timeline | SGLangTimeline, key: str) -> int:
    """The first step narrated by ``key``."""
    return next(s.index for s in timeline.steps if s.narration_key == key)
