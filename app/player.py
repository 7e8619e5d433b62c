"""Play: a periodic callback steps forward while `state.playing` (works in Pyodide too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param

from app.errors import logged
from app.state import SimulatorState

Schedule = Callable[..., Any]  # pn.state.add_periodic_callback's shape


class Player(param.Parameterized):
    state = param.ClassSelector(class_=SimulatorState)

    def __init__(self, schedule: Schedule | None = None, **params: Any) -> None:
        super().__init__(**params)
        self._schedule = schedule or pn.state.add_periodic_callback
        self._callback: Any = None
        self.state.param.watch(self._on_change, ["playing", "speed"])

    @property
    def period_ms(self) -> int:
        return round(1000 / float(self.state.speed))

    @logged
    def _tick(self) -> None:
        with pn.io.hold():
            self.state.step_forward()

    @logged
    def _on_change(self, *_: object) -> None:
        if self.state.playing:
            if self._callback is None:
                self._callback = self._schedule(self._tick, period=self.period_ms, start=True)
            else:
                self._callback.period = self.period_ms
        elif self._callback is not None:
            self._callback.stop()
            self._callback = None
