"""The code panel's truth: the lines recorded for a step are the lines that ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.lab.scenario import load_scenario
from engine.lab.timeline import Step, Timeline, build_timeline
from engine.lab.trace import FunctionTrace

POOL_FILE = "engine/vllm/block_pool.py"


@pytest.fixture(scope="module")
def timelines() -> dict[str, Timeline]:
    scenario = load_scenario("reset")
    return {mode: build_timeline(scenario, mode) for mode in scenario.modes}


# Keep mode runs the proposed reset; the other modes run vLLM 0.33.0's, as released.
RESET = {
    "default": "BlockPool.reset_prefix_cache",
    "preempt": "BlockPool.reset_prefix_cache",
    "keep": "KeepModeBlockPool.reset_prefix_cache",
}


def line_of(timeline: Timeline, text: str, after: int) -> int:
    """1-based number of the first line containing ``text`` from line ``after`` on."""
    lines = timeline.source(POOL_FILE).splitlines()
    return next(i for i in range(after - 1, len(lines)) if text in lines[i]) + 1


def reset_trace(step: Step, mode: str) -> FunctionTrace:
    return next(t for t in step.code if t.qualname == RESET[mode])


def test_guard_return_false_is_highlighted_in_default_mode_only(
    timelines: dict[str, Timeline],
) -> None:
    for mode, timeline in timelines.items():
        trace = reset_trace(timeline.steps[1], mode)
        guard_return = line_of(timeline, "return False", trace.start_line)
        success_return = line_of(timeline, "return True", trace.start_line)
        ran_guard = guard_return in trace.lines
        assert ran_guard == (mode == "default"), mode
        assert (success_return in trace.lines) == (mode != "default"), mode
        # the current line is the function's last statement that ran
        assert trace.last_line == (guard_return if mode == "default" else success_return)
        assert timeline.steps[1].focus == trace


def test_multi_line_statements_are_highlighted_whole(timelines: dict[str, Timeline]) -> None:
    trace = reset_trace(timelines["default"].steps[1], "default")
    warning = line_of(timelines["default"], "logger.warning(", trace.start_line)
    # the call spans four lines: all of them ran, as one statement
    assert {warning, warning + 1, warning + 2, warning + 3} <= set(trace.lines)


def test_functions_appear_in_call_order_and_only_when_they_ran(
    timelines: dict[str, Timeline],
) -> None:
    names = [t.qualname for t in timelines["keep"].steps[1].code]
    assert names[:4] == [
        "EngineCore.reset_prefix_cache",
        "Scheduler.reset_prefix_cache",
        "KVCacheManager.reset_prefix_cache",
        "KeepModeBlockPool.reset_prefix_cache",
    ]
    assert "Scheduler._preempt_request" not in names
    preempt_names = [t.qualname for t in timelines["preempt"].steps[1].code]
    assert "Scheduler._preempt_request" in preempt_names
    assert "BlockPool.free_blocks" in preempt_names


def test_recorded_lines_lie_inside_their_function(timelines: dict[str, Timeline]) -> None:
    for timeline in timelines.values():
        for step in timeline.steps:
            for trace in step.code:
                assert trace.lines, trace.qualname
                assert trace.start_line <= min(trace.lines) <= max(trace.lines) <= trace.end_line
                assert trace.last_line in trace.lines
                source = timeline.source(trace.file).splitlines()
                assert all(source[line - 1].strip() for line in trace.lines), "blank line traced"


def test_untraced_timeline_has_the_same_states(timelines: dict[str, Timeline]) -> None:
    plain = build_timeline(load_scenario("reset"), "keep", trace=False)
    assert [s.snapshot for s in plain.steps] == [s.snapshot for s in timelines["keep"].steps]
    assert all(s.code == () for s in plain.steps)


def test_every_module_of_the_model_is_traced_and_nothing_of_the_lab(
    timelines: dict[str, Timeline],
) -> None:
    # The model is the package engine/vllm/, whatever modules it holds: a new one is
    # traced (and its source shipped to the code panel) without being listed anywhere.
    on_disk = {
        f"engine/vllm/{path.name}"
        for path in (Path(__file__).resolve().parents[2] / "engine" / "vllm").glob("*.py")
        if path.name != "__init__.py"
    }
    assert {file for file, _ in timelines["keep"].sources} == on_disk
