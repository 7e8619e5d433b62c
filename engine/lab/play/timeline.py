"""What a timeline of either engine is: its steps, its record (sources, log, narration,
JSON), and the script played one engine step at a time (``play_script``).

Each engine's side builds its own (play/vllm/timeline.py, play/sglang/timeline.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from engine.lab.play.line_tracer import FunctionTrace, SourceIndex, Tracer, tracing
from engine.lab.play.records import LogLine
from engine.lab.play.scenario import Action

START_NARRATION_KEY = "start"


# `run_until_idle` stops here even if requests remain: a timeline has at most
# this many steps after the start (a playground's limit, engine/lab/play/scenario_file.py).
MAX_TIMELINE_STEPS = 2_000


SnapshotT = TypeVar("SnapshotT")


FactsT = TypeVar("FactsT")


@dataclass(frozen=True)
class StepRecord(Generic[SnapshotT, FactsT]):
    """A step of either engine's timeline: the state after it and what happened in it."""

    index: int
    label: str  # the action, as a call
    narration_key: str
    result: str | None  # what the action returned or raised
    snapshot: SnapshotT
    code: tuple[FunctionTrace, ...]  # in the order first entered
    focus: FunctionTrace | None
    facts: FactsT  # what the cache did during the step


class TimelineRecord:
    """What a timeline of either engine's model is as a record: its traced sources, its
    log so far, its narration, and its JSON (a frozen dataclass with `steps`,
    `narration`, `sources`)."""

    steps: tuple[Any, ...]
    narration: tuple[tuple[str, str], ...]
    sources: tuple[tuple[str, str], ...]
    # each engine's: (step, the previous step's snapshot or None) -> a template for a
    # step without a text; (template, step) -> the template filled from the step
    described: Callable[[Any, Any], str]
    filled: Callable[[str, Any], str]

    def __len__(self) -> int:
        return len(self.steps)

    def narration_template(self, step: Any) -> str:
        return dict(self.narration).get(step.narration_key, "")

    def narration_text(self, step: Any) -> str:
        """The step's narration, its placeholders filled from the step's own data; a step
        without a text (a playground's) is described from what the step did."""
        template = self.narration_template(step)
        if not template.strip():
            before = self.steps[step.index - 1].snapshot if step.index else None
            template = self.described(step, before)
        return self.filled(template, step)

    def source(self, file: str) -> str:
        return dict(self.sources)[file]

    def logs_until(self, index: int) -> list[LogLine]:
        """Every log line from the start up to and including step ``index``."""
        return [line for step in self.steps[: index + 1] for line in step.snapshot.logs]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = dataclasses.asdict(cast(Any, self))  # (each subclass is one)
        for step_data, step in zip(data["steps"], self.steps, strict=True):
            step_data["snapshot"] = step.snapshot.to_dict()
        data["narration"] = dict(self.narration)
        data["sources"] = dict(self.sources)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=True)

    def digest(self) -> str:
        """SHA-256 of the JSON: equal digests mean byte-identical timelines."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()


class ScriptRun(Protocol):
    """Either engine's live model while its timeline is recorded."""

    engine_dead: bool  # no action runs any more

    def perform(self, action: Action) -> str | None: ...

    def unfinished(self) -> bool: ...  # a request waits or runs: run_until_idle goes on


def _repeats(run: ScriptRun, action: Action, done: int, total: int) -> bool:
    """Whether ``action`` takes another engine step after ``done`` of them."""
    if total >= MAX_TIMELINE_STEPS or run.engine_dead:
        return False
    if action.kind == "run_until_idle":
        return run.unfinished()
    return done < action.count


def play_script(
    run: ScriptRun, script: Iterable[Action], indexes: tuple[SourceIndex, ...] | None
) -> Iterator[tuple[Action, str | None, tuple[FunctionTrace, ...]]]:
    """Run the script's actions, one engine step at a time: (action, result, code), the
    code traced in ``indexes`` (None: not traced)."""
    steps = 0
    with tracing(indexes) if indexes is not None else nullcontext():
        for action in script:
            done = 0  # `step` with a count and `run_until_idle` take several steps
            while done == 0 or _repeats(run, action, done, steps):
                done += 1
                steps += 1
                tracer = Tracer(indexes) if indexes is not None else None
                with tracer or nullcontext():
                    result = run.perform(action)
                yield action, result, tracer.result() if tracer else ()


def step_focus(
    code: tuple[FunctionTrace, ...], names: Iterable[str | None]
) -> FunctionTrace | None:
    """The function a step is "about", whose last line is marked as the current one: the
    first of ``names`` that ran, else the first entered."""
    return next(
        (t for name in names for t in code if t.qualname == name), code[0] if code else None
    )
