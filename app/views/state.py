"""What Python opens: a scenario, the mode of its timeline, the step a document opens at.

Pure param: no widgets, no I/O beyond asking the engine for a timeline. It is not the
learner's position, which lives in the browser alone (app/components/player.js): it
moves only when the page asks Python to open something (a deep link, a scenario picked,
an address, a playground's mode) or an edit plays a new playground.
"""

from __future__ import annotations

import param

from app.data import timelines
from app.playground.store import counted_last_step, is_playground
from engine.lab.play.scenario import MODES, SGLANG_MODES
from engine.lab.play.sglang.timeline import SGLangStep, SGLangTimeline
from engine.lab.play.vllm.timeline import Step, Timeline


class SimulatorState(param.Parameterized):
    # A playground's name (app/playground/) is not in the list: it is checked where it is made.
    scenario: param.Selector[str] = param.Selector(
        objects=timelines.names(), default=timelines.default_scenario(), check_on_set=False
    )
    # vLLM's modes and SGLang's schedule policies (app/data/timelines.py: one name, one engine)
    mode: param.Selector[str] = param.Selector(objects=[*MODES, *SGLANG_MODES], default=MODES[0])
    step = param.Integer(default=0, bounds=(0, None))
    timeline = param.ClassSelector(
        class_=(Timeline, SGLangTimeline), allow_None=True, doc="Built by either engine"
    )

    def __init__(self, **params: object) -> None:
        # The step a jump (``open``) goes to, for the rebuild it causes; 0 otherwise.
        self._opening_step = 0
        super().__init__(**params)
        self._rebuild()

    # -- derived, read-only views of the timeline ----------------------------
    @property
    def last_step(self) -> int:
        assert self.timeline is not None
        return len(self.timeline.steps) - 1

    @property
    def current(self) -> Step | SGLangStep:
        assert self.timeline is not None
        current: Step | SGLangStep = self.timeline.steps[self.step]
        return current

    @property
    def modes(self) -> tuple[str, ...]:
        """Every timeline's mode, on every engine the scenario plays on."""
        return timelines.modes(self.scenario)

    @property
    def key(self) -> str:
        """The open timeline's name in the document (app/data/timelines.py)."""
        assert self.timeline is not None
        return timelines.timeline_key(self.timeline)

    @property
    def scenario_timelines(self) -> tuple[Timeline | SGLangTimeline, ...]:
        """Every mode of the open scenario: the browser holds them all, to switch at once.
        A playground's other modes are built when asked for: each edit builds one."""
        if is_playground(self.scenario) and self.timeline is not None:
            return (self.timeline,)
        return timelines.of_scenario(self.scenario)

    @property
    def lasts(self) -> dict[str, int]:
        """Timeline key -> last step, for every mode of the open scenario."""
        return timelines.lasts(self.scenario)

    @property
    def counted_lasts(self) -> dict[str, int | None]:
        """``lasts`` as known without playing a mode: a playground's modes not counted yet
        (each a run of the engine) are None (app/views/sender.py counts a large one's a
        moment later, after the shown mode's pages)."""
        if is_playground(self.scenario):
            return {
                f"{self.scenario}/{m}": self.last_step
                if m == self.mode
                else counted_last_step(self.scenario, m)
                for m in self.modes
            }
        return dict(self.lasts)

    # -- the learner's actions ------------------------------------------------
    def open(self, scenario: str, mode: str, step: int) -> None:
        """Jump to a checked state (a deep link): no restart-at-0 in between. A new
        timeline comes with its step in one batch, so the views render its pages
        around that step once, not around step 0 first."""
        self._opening_step = step
        try:
            self.param.update(scenario=scenario, mode=mode)  # one batch: one rebuild
        finally:
            self._opening_step = 0
        self.step = max(0, min(step, self.last_step))

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
        last = len(built.steps) - 1
        self.param.step.bounds = (0, last)
        # One batch, so views render once for the new timeline at its first step.
        self.param.update(timeline=built, step=max(0, min(self._opening_step, last)))
