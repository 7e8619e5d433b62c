"""The code panel's truth: the lines recorded for a step are the lines that ran."""

from __future__ import annotations

import gc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import CodeType, FunctionType
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.lab.play import line_tracer as trace_module
from engine.lab.play.line_tracer import FunctionTrace, Tracer, line_bases
from engine.lab.play.scenario import MODES, load_scenario
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import Step, Timeline, build_timeline, source_indexes
from tests.engine.test_goldens import run_on_python
from tests.engine.test_playground import playground_scripts

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
        "KeepModeEngineCore.reset_prefix_cache",
        "KeepModeScheduler.reset_prefix_cache",
        "KeepModeKVCacheManager.reset_prefix_cache",
        "KeepModeBlockPool.reset_prefix_cache",
    ]
    default_names = [t.qualname for t in timelines["default"].steps[1].code]
    assert default_names[:4] == [
        "EngineCore.reset_prefix_cache",
        "Scheduler.reset_prefix_cache",
        "KVCacheManager.reset_prefix_cache",
        "BlockPool.reset_prefix_cache",
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


def _built_without_kept_results(build: Callable[[], Timeline]) -> Timeline:
    with (
        mock.patch.object(trace_module, "_RESULTS", {}),
        mock.patch.object(trace_module, "_RESULTS_BOUND", 0),
        mock.patch.object(trace_module, "_RAW_RESULTS", {}),
        mock.patch.object(trace_module, "_RAW_EVENTS_BOUND", 0),
    ):
        return build()


@settings(max_examples=40, deadline=None)
@given(first=playground_scripts(), second=playground_scripts(), mode=st.sampled_from(MODES))
def test_kept_step_results_give_the_traces_grouped_anew(
    first: dict[str, Any], second: dict[str, Any], mode: str
) -> None:
    """A step's grouped lines are kept and reused for a step that ran the same lines in
    the same order: the code panel must show what grouping them anew shows, also after
    another script's steps filled the store."""
    for data in (first, second):
        scenario = scenario_from_dict(data)
        kept = build_timeline(scenario, mode)
        anew = _built_without_kept_results(partial(build_timeline, scenario, mode))
        assert [s.code for s in kept.steps] == [s.code for s in anew.steps]
        assert [s.focus for s in kept.steps] == [s.focus for s in anew.steps]


def test_kept_results_tell_apart_steps_that_ran_the_same_lines_in_another_order() -> None:
    """Two steps that ran the same statements of a function, but ended on different ones,
    show different current lines (the first-seen order alone would mix them up); two
    that entered the same functions in another order list them in that order."""
    index = next(i for i in source_indexes() if i.file.endswith("block_pool.py"))
    by_function: dict[str, list[int]] = {}
    for line, (span, start) in sorted(index.runs.items()):
        if start == line and start not in by_function.get(span.qualname, []):
            by_function.setdefault(span.qualname, []).append(start)
    first, second = next(starts for starts in by_function.values() if len(starts) >= 2)[:2]

    def traced(lines: list[int]) -> tuple[FunctionTrace, ...]:
        tracer = Tracer(source_indexes())
        base = line_bases(source_indexes())[index.path]
        tracer._events = [base + line for line in lines]
        return tracer.result()

    ends_on_first = traced([first, second, first])
    ends_on_second = traced([first, second])
    assert (ends_on_first[0].last_line, ends_on_second[0].last_line) == (first, second)
    assert ends_on_first[0].lines == ends_on_second[0].lines
    # The same lines of two functions entered in the other order: the other function first.
    one, other = (starts[0] for starts in list(by_function.values())[:2])
    assert [t.qualname for t in traced([one, other, one])] == [
        t.qualname for t in reversed(traced([other, one]))
    ]


MONITORING_SCRIPT = """
import sys
from engine.lab.play import line_tracer as trace
from engine.lab.play.scenario import load_scenario
from engine.lab.play.vllm.timeline import build_timeline, source_indexes
import cProfile
profile = cProfile.Profile()  # a profiler can watch a traced build (their tool ids differ)
profile.enable()
build_timeline(load_scenario("reset"), "keep")
profile.disable()
code = [c for i in source_indexes() for c in trace.module_code(i.module)]
tool = trace.LINES._tool
print(type(trace.LINES).__name__, len(code), sum(map(bool, (
    sys.monitoring.get_local_events(tool, c) for c in code))))
"""


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_on_newer_pythons_lines_come_from_monitoring_switched_off_after_a_build(
    version: str,
) -> None:
    """Pyodide's Python (3.12) records lines with sys.monitoring (the timelines it builds
    equal this Python's: test_goldens.py); after a traced build no code of the engine
    keeps its line events, so an untraced run (the workload lab's) pays nothing; and
    cProfile still runs beside it."""
    out = run_on_python(version, MONITORING_SCRIPT).split()
    assert out[0] == "_MonitoredLines"
    assert int(out[1]) > 100  # the engine's functions and methods were found
    assert out[2] == "0"


def test_the_code_switched_on_for_line_events_is_every_function_of_the_engine() -> None:
    """On 3.12+ only these code objects report lines (a function missed would show as
    never run): every function object of a traced file that the collector knows of."""
    indexes = source_indexes()
    paths = {index.module.__file__ for index in indexes}
    found = {code for index in indexes for code in trace_module.module_code(index.module)}
    known: set[CodeType] = set()

    def add(code: CodeType) -> None:
        if code not in known:
            known.add(code)
            for const in code.co_consts:
                if isinstance(const, CodeType):
                    add(const)

    for obj in gc.get_objects():
        if isinstance(obj, FunctionType) and obj.__code__.co_filename in paths:
            add(obj.__code__)
    assert known and known <= found
