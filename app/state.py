"""The learner's position in a timeline: scenario, mode, step, play state.

Pure param: no widgets, no I/O beyond asking the engine for a timeline, so every
rule here is testable without a browser.
"""

from __future__ import annotations

import param

from app import timelines
from engine.scenario import MODES
from engine.timeline import Step, Timeline

# Steps per second offered by the speed control.
SPEEDS = (0.5, 1.0, 2.0, 4.0)


class SimulatorState(param.Parameterized):
    scenario = param.Selector(objects=timelines.names(), default=timelines.default_scenario())
    mode = param.Selector(objects=list(MODES), default=MODES[0])
    step = param.Integer(default=0, bounds=(0, None))
    playing = param.Boolean(default=False)
    speed = param.Selector(objects=list(SPEEDS), default=1.0, doc="Steps per second")
    timeline = param.ClassSelector(class_=Timeline, allow_None=True, doc="Built by the engine")

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._rebuild()

    # -- derived, read-only views of the timeline ----------------------------
    @property
    def last_step(self) -> int:
        assert self.timeline is not None
        return len(self.timeline.steps) - 1

    @property
    def current(self) -> Step:
        assert self.timeline is not None
        return self.timeline.steps[self.step]

    @property
    def previous(self) -> Step | None:
        assert self.timeline is not None
        return self.timeline.steps[self.step - 1] if self.step > 0 else None

    @property
    def modes(self) -> tuple[str, ...]:
        return timelines.scenario(self.scenario).modes

    # -- the learner's actions ------------------------------------------------
    def open(self, scenario: str, mode: str, step: int) -> None:
        """Jump to a checked state (a deep link): no restart-at-0 in between."""
        self.param.update(scenario=scenario, mode=mode)  # one batch: one rebuild
        self.step = max(0, min(step, self.last_step))

    def step_forward(self) -> None:
        if self.step < self.last_step:
            self.step += 1
        if self.step >= self.last_step:
            self.playing = False  # Play stops by itself at the end

    def step_back(self) -> None:
        self.param.update(step=max(0, self.step - 1), playing=False)

    def restart(self) -> None:
        self.param.update(step=0, playing=False)

    def toggle_play(self) -> None:
        if self.playing:
            self.playing = False
        elif self.step >= self.last_step:
            self.param.update(step=0, playing=True)  # Play at the end replays
        else:
            self.playing = True

    # -- keeping the timeline in line with scenario and mode -----------------
    @param.depends("scenario", "mode", watch=True)
    def _rebuild(self) -> None:
        modes = self.modes
        if self.mode not in modes:
            self.mode = modes[0]  # triggers _rebuild again with a valid mode
            return
        built = timelines.timeline(self.scenario, self.mode)
        if built is self.timeline:
            return
        self.param.step.bounds = (0, len(built.steps) - 1)
        # One batch, so views render once for the new timeline at step 0.
        self.param.update(timeline=built, step=0, playing=False)
