"""The workload lab's logic, without widgets: knobs -> workloads -> runs -> chart columns.

The engine does the work (engine/workload.py); this module only decides which runs
the lab shows and turns a run's series into the columns a Bokeh ColumnDataSource
takes. ``LabRun`` plays the runs in slices and awaits between them, so the page
stays responsive, shows progress and can stop a long run.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.workload import (
    COLUMNS,
    PROGRESS_EVERY_STEPS,
    Preset,
    Workload,
    WorkloadError,
    WorkloadRun,
    WorkloadRunner,
    load_preset,
    preset_names,
    problems,
    typed_workload,
)

DEFAULT_PRESET = "shared-prefix"
# A step view draws every block of the pool: beyond this, a lab run is too big for it.
MAX_STEP_VIEW_BLOCKS = 400

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


def chart_data(run: WorkloadRun | None) -> ChartData:
    """Every series column as floats (no value: NaN, which Bokeh draws as a gap)."""
    if run is None:
        return {column: [] for column in COLUMNS}
    return {
        column: [math.nan if v is None else float(v) for v in values]
        for column, values in run.series.items()
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


class LabRun:
    """Plays the learner's workload (and the overlay's) a slice of steps at a time.

    ``stop()`` ends it at the next slice; ``progress`` is the share of requests
    finished over both runs.
    """

    def __init__(self, preset: Preset, workload: Workload, overlay: bool) -> None:
        self.preset = preset
        compare = preset.compare_workload(workload) if overlay else None
        self.runners = [WorkloadRunner(w) for w in (workload, compare) if w is not None]
        self.stopped = False

    @property
    def progress(self) -> float:
        total = sum(r.workload.requests for r in self.runners)
        return sum(r.num_finished for r in self.runners) / total

    def stop(self) -> None:
        self.stopped = True

    async def play(self, on_progress: Callable[[float], None]) -> LabResult | None:
        """Run to the end, awaiting between slices; None if stopped first."""
        for runner in self.runners:
            while not runner.done:
                runner.advance(PROGRESS_EVERY_STEPS)
                on_progress(self.progress)
                await asyncio.sleep(0)
                if self.stopped:
                    return None
        runs = [runner.result() for runner in self.runners]
        return LabResult(self.preset, runs[0], runs[1] if len(runs) > 1 else None)


def preset(name: str) -> Preset:
    return load_preset(name)
