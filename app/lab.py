"""The workload lab's logic, without widgets: knobs -> workloads -> runs -> chart columns.

The engine does the work (engine/lab/workload.py); this module only decides which runs
the lab shows and turns a run's series into the columns a Bokeh ColumnDataSource
takes. ``LabRun`` plays the runs in slices and awaits between them, so the page
stays responsive, shows progress and can stop a long run.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.lab.timeline import Timeline, build_timeline
from engine.lab.workload import (
    COLUMNS,
    PROGRESS_EVERY_STEPS,
    Preset,
    Workload,
    WorkloadError,
    WorkloadRun,
    WorkloadRunner,
    fits_a_scenario,
    load_preset,
    preset_names,
    problems,
    typed_workload,
    workload_scenario,
)

DEFAULT_PRESET = "shared-prefix"
# Requests built (their prompts hashed) per slice before a run starts.
PREPARE_EVERY_REQUESTS = 50

ChartData = dict[str, list[float]]


def presets() -> list[str]:
    return list(preset_names())


def default_preset() -> str:
    names = presets()
    return DEFAULT_PRESET if DEFAULT_PRESET in names else names[0]


def check_knobs(values: Mapping[str, Any]) -> tuple[Workload | None, dict[str, str]]:
    """The workload the knobs describe, or None and a message per knob that is wrong."""
    missing = {k: f"{k} needs a value" for k, v in values.items() if v is None}
    if missing:
        return None, missing
    try:
        workload = typed_workload(values)
    except WorkloadError as error:  # a wrong type: the widgets do not allow one
        return None, {error.knob: str(error)}
    found = problems(workload)
    return (None if found else workload), found


def chart_data(run: WorkloadRun | None, columns: Sequence[str] = tuple(COLUMNS)) -> ChartData:
    """The series' columns as floats (no value: NaN, which Bokeh draws as a gap); a
    chart sends only the columns it draws."""
    if run is None:
        return {column: [] for column in columns}
    return {
        column: [math.nan if v is None else float(v) for v in run.series[column]]
        for column in columns
    }


@dataclass(frozen=True)
class LabResult:
    """What the lab shows: the learner's run and, if asked for, the overlaid one."""

    preset: Preset
    run: WorkloadRun
    compare: WorkloadRun | None

    @property
    def is_preset(self) -> bool:
        """Whether the knobs are still the preset's, so its expected outcome applies."""
        return self.run.workload == self.preset.workload

    def outcome_text(self) -> str:
        return self.preset.expected_text(self.run, self.compare)


class FinishedRuns:
    """The last few finished runs by their workload, so a knob change reruns only
    what it changed: the overlay keeps its run when a knob it overrides changes,
    and a workload seen a moment ago (a knob set back) is shown at once."""

    def __init__(self, maxsize: int = 8) -> None:
        self.maxsize = maxsize
        self._runs: OrderedDict[Workload, WorkloadRun] = OrderedDict()

    def get(self, workload: Workload) -> WorkloadRun | None:
        run = self._runs.get(workload)
        if run is not None:
            self._runs.move_to_end(workload)
        return run

    def put(self, run: WorkloadRun) -> None:
        self._runs[run.workload] = run
        self._runs.move_to_end(run.workload)
        while len(self._runs) > self.maxsize:
            self._runs.popitem(last=False)


# Runs are a pure function of their workload, so one store serves every lab session.
FINISHED_RUNS = FinishedRuns()


class LabRun:
    """Plays the learner's workload (and the overlay's) a slice of steps at a time.

    A workload that was run a moment ago is not run again (see FinishedRuns).
    ``stop()`` ends it at the next slice; ``progress`` is the share of the work done
    over the runs still to play.
    """

    def __init__(
        self,
        preset: Preset,
        workload: Workload,
        overlay: bool,
        finished: FinishedRuns = FINISHED_RUNS,
    ) -> None:
        self.preset = preset
        compare = preset.compare_workload(workload) if overlay else None
        self.workloads = [w for w in (workload, compare) if w is not None]
        self.finished = finished
        self._known = {w: run for w in self.workloads if (run := finished.get(w)) is not None}
        self.runners = [
            WorkloadRunner(w) for w in dict.fromkeys(self.workloads) if w not in self._known
        ]
        self._num_prepared = dict.fromkeys(self.runners, 0)  # requests built so far
        self.stopped = False

    @property
    def progress(self) -> float:
        """The share of the work done: building the requests (hashing their prompts)
        is the first half, running them to the end the second."""
        total = 2 * sum(r.workload.requests for r in self.runners)
        done = sum(self._num_prepared.values()) + sum(r.num_finished for r in self.runners)
        return done / total if total else 1.0

    def stop(self) -> None:
        self.stopped = True

    async def play(
        self,
        on_progress: Callable[[float], None],
        on_learners_run: Callable[[WorkloadRun], None] | None = None,
    ) -> LabResult | None:
        """Run to the end, awaiting between slices; None if stopped first.

        ``on_learners_run`` gets the learner's run as soon as it is known when the
        overlay's run has still to play, so the page can show it first."""
        played = dict(self._known)
        for runner in self.runners:
            learners = played.get(self.workloads[0])
            if on_learners_run is not None and learners is not None:
                on_learners_run(learners)
                on_learners_run = None
                await asyncio.sleep(0)
                if self.stopped:
                    return None
            # Hashing thousands of prompts at once would hold the page for seconds.
            while not runner.prepare(PREPARE_EVERY_REQUESTS):
                self._num_prepared[runner] += PREPARE_EVERY_REQUESTS
                on_progress(self.progress)
                await asyncio.sleep(0)
                if self.stopped:
                    return None
            self._num_prepared[runner] = runner.workload.requests
            while not runner.done:
                runner.advance(PROGRESS_EVERY_STEPS)
                on_progress(self.progress)
                await asyncio.sleep(0)
                if self.stopped:
                    return None
            played[runner.workload] = runner.result()
            self.finished.put(played[runner.workload])
        runs = [played[w] for w in self.workloads]
        return LabResult(self.preset, runs[0], runs[1] if len(runs) > 1 else None)


def preset(name: str) -> Preset:
    return load_preset(name)


@dataclass(frozen=True)
class RunSteps:
    """A lab run replayed as an (untraced) timeline, for the step view."""

    timeline: Timeline
    after_step: list[int]  # engine step n (from 1) -> timeline step after it: after_step[n - 1]

    def index(self, engine_step: int) -> int:
        return self.after_step[max(1, min(engine_step, len(self.after_step))) - 1]


@functools.lru_cache(maxsize=4)
def run_steps(workload: Workload, num_steps: int) -> RunSteps | None:
    """The run's steps, block by block; None when the run is too big to draw."""
    if not fits_a_scenario(workload, num_steps):
        return None
    scenario, after_step = workload_scenario(workload, num_steps)
    return RunSteps(build_timeline(scenario, "default", trace=False), after_step)
