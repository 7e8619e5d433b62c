"""The workload lab's logic, without widgets: knobs -> workloads -> runs -> chart columns.
``LabRun`` plays the runs in slices (the page shows progress, Stop works), ``RunAhead`` the
likely next ones while the lab is idle; the traces' are app/data/trace_lab.py's."""

from __future__ import annotations

import asyncio
import functools
import gc
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from app.data.side_runs import SideRuns, default_processes
from app.host.runtime import in_pyodide
from app.render.lab import ENGINE_NAMES
from engine.lab.play.scenario import MODES
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from engine.lab.workload.presets import Preset
from engine.lab.workload.run import COLUMNS, PROGRESS_EVERY_STEPS, Runner, WorkloadRun
from engine.lab.workload.sglang.runner import NO_MEANING_ON_SGLANG, SGLangWorkloadRunner
from engine.lab.workload.vllm.runner import WorkloadRunner
from engine.lab.workload.workload import (
    SALT_POLICIES,
    Workload,
    WorkloadError,
    fits_a_scenario,
    problems,
    typed_workload,
    workload_scenario,
)

# Requests built (their prompts hashed) per slice before a run starts.
PREPARE_EVERY_REQUESTS = 50
# A run played ahead goes in short slices, so a click waits for at most one of them
# (a few ms in CPython, a few tens in Pyodide), and pauses while any run is played
# for a learner.
# The runs ahead begin once the page has the charts drawn (the changes are still
# being sent to it when the run ends) and the learner has had a look.
AHEAD_START_S = 0.5
AHEAD_PREPARE_EVERY_REQUESTS = 10
AHEAD_EVERY_STEPS = 1
AHEAD_PAUSE_S = 0.005
AHEAD_WAIT_S = 0.05
# Between two slices of a learner's run. On a server, not zero: a click (Stop, a
# knob) takes a dozen turns of Tornado's event loop to reach its callback, and with
# no pause each turn waited for a whole slice (a Stop landed after the run had
# ended). In Pyodide a click is one message, and a timer would cost 4 ms a slice.
SLICE_PAUSE_S = 0.0 if in_pyodide() else 0.001
# How long the learner's run waits for the overlay's, played beside (SideRuns), to
# be drawn with it rather than before it.
BESIDE_GRACE_S = 0.05
# Past this, a side not answering is stalled (a loaded machine, a lost message) and the run
# plays here: a preset's run there takes 0.5-12 times the learner's (at most 0.64 s in
# CPython, 2.5 times that in Pyodide), so 20 times the runs here, and 5 s at least.
BESIDE_DEADLINE_S = 5.0
BESIDE_DEADLINE_TIMES = 20
# Runs of more tokens than this are not played ahead (a few would keep a 2-core
# server or a browser tab busy for seconds), and a stopped one is not kept (its
# requests' token ids alone take about 36 bytes a token).
AHEAD_MAX_TOKENS = 1_000_000

ChartData = dict[str, list[float]]
# The engine knob of both lab groups (the workloads' and the traces'): its choices, each
# with the engines it runs, and the word the address carries for it (`&engine=both`).
ENGINE_CHOICES = {"vLLM": ("vllm",), "SGLang": ("sglang",), "both": ("vllm", "sglang")}
ENGINE_WORDS = {"vLLM": "vllm", "SGLang": "sglang", "both": "both"}
DEFAULT_ENGINE = "vLLM"
# SGLang's pool columns count KV slots (tokens) where vLLM's count blocks: the charts
# draw them in blocks' worth (slots / block_size), so both engines share one axis.
SLOT_COLUMNS = frozenset({"held_blocks", "free_cached_blocks", "free_empty_blocks", "evictions"})
# A run with more knobs changed than this is named by their count (a table head on a
# phone has room for about two).
MAX_KNOBS_NAMED = 2


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


def engine_choice(word: str | None) -> tuple[str, str | None]:
    """The engine knob's choice for the address's ``engine`` word, and a notice if it is not one."""
    choices = {known: choice for choice, known in ENGINE_WORDS.items()}
    if not word:
        return DEFAULT_ENGINE, None
    if word in choices:
        return choices[word], None
    words = ", ".join(ENGINE_WORDS.values())
    return DEFAULT_ENGINE, f"Ignored engine={word!r}: not one of {words}. Showing vLLM."


def chart_data(
    run: WorkloadRun | None,
    columns: Sequence[str] = tuple(COLUMNS),
    block_size: int | None = None,
) -> ChartData:
    """The series' columns as floats (no value: NaN, a gap); SGLang's KV slots (SLOT_COLUMNS) in
    blocks of ``block_size`` tokens, else of its run's block size."""
    if run is None:
        return {column: [] for column in columns}
    per_block = (block_size or run.workload.block_size) if run.engine == "sglang" else 1

    def scale(column: str) -> float:
        return per_block if column in SLOT_COLUMNS else 1

    return {
        column: [math.nan if v is None else v / scale(column) for v in run.series[column]]
        for column in columns
    }


def means_nothing_on_sglang(columns: Sequence[str]) -> bool:
    """Whether every one of these columns is empty on SGLang (it retracts rather than preempts)."""
    return all(column in NO_MEANING_ON_SGLANG for column in columns)


@dataclass(frozen=True)
class LabResult:
    """What the lab shows: the learner's run and the overlaid one, per engine asked for."""

    preset: Preset
    run: WorkloadRun
    compare: WorkloadRun | None
    more: tuple[tuple[WorkloadRun, WorkloadRun | None], ...] = ()

    @property
    def engine_runs(self) -> list[tuple[WorkloadRun, WorkloadRun | None]]:
        """Each engine's (learner's run, overlaid run), in the order asked for."""
        return [(self.run, self.compare), *self.more]

    @property
    def engines(self) -> tuple[str, ...]:
        return tuple(run.engine for run, _ in self.engine_runs)

    @property
    def names_engines(self) -> bool:
        """Whether labels name the engine: always but for vLLM alone (the lab as it was)."""
        return self.engines != ("vllm",)

    def run_of(self, engine: str, compare: bool = False) -> WorkloadRun | None:
        """The engine's learner's run (or overlaid run); None if not played or not asked for."""
        for run, compared in self.engine_runs:
            if run.engine == engine:
                return compared if compare else run
        return None

    @property
    def is_preset(self) -> bool:
        """Whether the knobs are still the preset's, so its expected outcome applies."""
        return self.run.workload == self.preset.workload

    @property
    def expected_outcomes(self) -> list[tuple[str, str]] | None:
        """Each engine's (name or "", expected outcome); None if the knobs are not the preset's."""
        if not self.is_preset:
            return None
        return [
            (
                ENGINE_NAMES[run.engine] if self.names_engines else "",
                self.preset.expected_text(run, compare),
            )
            for run, compare in self.engine_runs
        ]

    @property
    def run_labels(self) -> list[str]:
        """What the learner's run and the overlaid one (if any) are called, on any engine."""
        labels = [self.run_label]
        if self.compare is not None:
            labels.append(self.preset.compare_label)
        return labels

    @property
    def labelled_runs(self) -> list[tuple[str, WorkloadRun]]:
        """The learner's run on each engine, then the overlaid one's, each with its name."""
        labels = self.run_labels
        runs = []
        for index, label in enumerate(labels):
            for run, compare in self.engine_runs:
                shown = run if index == 0 else compare
                assert shown is not None
                name = f"{ENGINE_NAMES[shown.engine]}: {label}" if self.names_engines else label
                runs.append((name, shown))
        return runs

    @property
    def run_label(self) -> str:
        """The learner's run's name: the preset's label, or the knobs that differ from it."""
        if self.is_preset:
            return self.preset.label
        preset_knobs = self.preset.workload.knobs()
        changed = [
            f"{knob} = {value}"
            for knob, value in self.run.workload.knobs().items()
            if value != preset_knobs[knob]
        ]
        if len(changed) > MAX_KNOBS_NAMED:
            return f"your knobs ({len(changed)} changed)"
        return "your knobs: " + ", ".join(changed)

    def changes_from(
        self,
        preset: Preset,
        knobs: Mapping[str, Any],
        overlay: bool,
        engines: Sequence[str] = ("vllm",),
    ) -> list[str]:
        """How the results differ from the controls, as the results have it ("overlay on")."""
        changes = [] if preset.name == self.preset.name else [f"preset {self.preset.name}"]
        if tuple(engines) != self.engines:
            names = {v: k for k, v in ENGINE_CHOICES.items()}
            changes.append(f"engine {names[self.engines]}")
        shown = self.run.workload.knobs()
        changes += [f"{knob} = {shown[knob]}" for knob, v in knobs.items() if shown[knob] != v]
        drawn = self.compare is not None
        if preset.compare and drawn != overlay:
            changes.append(f"overlay {'on' if drawn else 'off'}")
        return changes


def draws_nothing(runs: Sequence[WorkloadRun], columns: Sequence[str]) -> bool:
    """Whether every value of these series is zero or absent in every run."""
    return all(not v for run in runs for column in columns for v in run.series[column])


def keep_recent(store: OrderedDict[Any, Any], key: Any, maxsize: int) -> None:
    """``key`` is the store's most recent; the least recent beyond ``maxsize`` go."""
    store.move_to_end(key)
    while len(store) > maxsize:
        store.popitem(last=False)


class FinishedRuns:
    """The last few finished runs by workload: a knob change reruns only what it changed."""

    def __init__(self, maxsize: int = 32) -> None:
        self.maxsize = maxsize
        self._runs: OrderedDict[tuple[str, Workload], WorkloadRun] = OrderedDict()

    def get(self, workload: Workload, engine: str = "vllm") -> WorkloadRun | None:
        run = self._runs.get((engine, workload))
        if run is not None:
            keep_recent(self._runs, (engine, workload), self.maxsize)
        return run

    def put(self, run: WorkloadRun) -> None:
        self._runs[run.engine, run.workload] = run
        keep_recent(self._runs, (run.engine, run.workload), self.maxsize)


class RunsInProgress:
    """Unfinished runners, shared: a run plays once and goes on when asked for again."""

    def __init__(self, maxsize: int = 3) -> None:
        self.maxsize = maxsize
        self._runners: OrderedDict[tuple[str, Workload], Runner] = OrderedDict()

    def runner(self, workload: Workload, engine: str = "vllm") -> Runner:
        key = (engine, workload)
        runner = self._runners.get(key)
        if runner is None:
            runner = (WorkloadRunner if engine == "vllm" else SGLangWorkloadRunner)(workload)
            if workload.total_tokens > AHEAD_MAX_TOKENS:
                return runner
            self._runners[key] = runner
        keep_recent(self._runners, key, self.maxsize)
        return runner

    def __contains__(self, workload: Workload) -> bool:
        """Whether vLLM's run of the workload is in progress."""
        return ("vllm", workload) in self._runners

    def finished(self, runner: Runner) -> None:
        key = (runner.engine_name, runner.workload)
        if self._runners.get(key) is runner:
            del self._runners[key]


# Runs are a pure function of their workload, so one store serves every lab session.
FINISHED_RUNS = FinishedRuns()
RUNS_IN_PROGRESS = RunsInProgress()
SIDE_RUNS = SideRuns(default_processes())


def start_side_runs() -> None:
    """Start the sides not started yet, so that the next knob change finds them ready."""
    SIDE_RUNS.start()


_collector_pauses = 0


@contextmanager
def cycle_collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while any run plays (the pauses may overlap): each collection
    walked a run's pool and requests again (about 150 ms of three `shared-prefix` runs in
    Pyodide)."""
    global _collector_pauses
    if _collector_pauses == 0 and not gc.isenabled():
        yield  # someone else turned it off: leave it so
        return
    _collector_pauses += 1
    gc.disable()
    try:
        yield
    finally:
        _collector_pauses -= 1
        if _collector_pauses == 0:
            gc.enable()


@contextmanager
def played_for_a_learner() -> Iterator[None]:
    """While a learner's run plays: runs ahead wait and the cyclic collector is paused."""
    LabRun.playing_for_learners += 1
    try:
        with cycle_collector_paused():
            yield
    finally:
        LabRun.playing_for_learners -= 1


class Stepper(Protocol):
    """What a run plays a slice at a time: an engine's runner, a fleet."""

    @property
    def done(self) -> bool: ...

    def advance(self, count: int) -> None: ...


class SlicedRun:
    """A run played a slice at a time for a learner; ``stop()`` ends it at the next slice."""

    stopped = False

    def stop(self) -> None:
        self.stopped = True

    async def _between_slices(self) -> bool:
        """Let the page go on; False once stopped."""
        await asyncio.sleep(SLICE_PAUSE_S)
        return not self.stopped

    async def _advance(self, stepper: Stepper, every: int, on_slice: Callable[[], None]) -> bool:
        """Advance ``stepper`` to its end, ``every`` at a time; False if stopped first."""
        while not stepper.done:
            stepper.advance(every)
            on_slice()
            if not await self._between_slices():
                return False
        return True


class LabRun(SlicedRun):
    """Plays the learner's workload (and the overlay's) a slice of steps at a time, reusing
    FinishedRuns and RunsInProgress; the overlay's plays in a side (SideRuns) where one is ready.
    A run played ``ahead`` goes in short slices and waits while any run is played for a learner."""

    # Runs being played for a learner, in this process: runs played ahead wait.
    playing_for_learners = 0

    def __init__(
        self,
        preset: Preset,
        workload: Workload,
        overlay: bool,
        finished: FinishedRuns | None = None,
        in_progress: RunsInProgress | None = None,
        ahead: bool = False,
        side: SideRuns | None = None,
        engines: Sequence[str] = ("vllm",),
    ) -> None:
        """``finished``, ``in_progress``, ``side``: default, the process's."""
        self.preset = preset
        compare = preset.compare_workload(workload) if overlay else None
        self.workloads = [w for w in (workload, compare) if w is not None]
        self.engines = tuple(engines)
        # (engine, workload): the learner's run and the overlay's on each engine
        self.keys = [(e, w) for e in self.engines for w in self.workloads]
        self.finished = finished = FINISHED_RUNS if finished is None else finished
        self.in_progress = in_progress = RUNS_IN_PROGRESS if in_progress is None else in_progress
        self.ahead = ahead
        self._known = {k: run for k in self.keys if (run := finished.get(k[1], k[0])) is not None}
        to_play = [k for k in dict.fromkeys(self.keys) if k not in self._known]
        self._beside: Future[WorkloadRun] | None = None
        self._sides = SIDE_RUNS if side is None else side
        # A side plays vLLM's runs only (app/data/side_runs.py): vLLM's overlay, while the
        # rest plays here.
        beside = ("vllm", compare) if compare is not None else None
        if not ahead and len(to_play) >= 2 and beside in to_play:
            compared = beside[1]
            # Not a run begun here (played ahead, then stopped), nor one so long that a
            # Stop, which cannot reach it there, would leave a process busy for seconds.
            if compared not in in_progress and compared.total_tokens <= AHEAD_MAX_TOKENS:
                self._beside = self._sides.submit(compared)
                if self._beside is not None:
                    to_play.remove(beside)
        self.runners = [in_progress.runner(w, e) for e, w in to_play]

    @property
    def progress(self) -> float:
        """The share of the work done: building the requests, then running them (the
        overlay's, played beside, done when it comes)."""
        total = 2 * sum(r.workload.requests for r in self.runners)
        done = sum(r.num_prepared + r.num_finished for r in self.runners)
        if self._beside is not None:
            total += 2 * self.workloads[1].requests
            done += 2 * self.workloads[1].requests if self._beside.done() else 0
        return done / total if total else 1.0

    async def _between_slices(self) -> bool:
        """Let the page (and other sessions) go on; False once stopped."""
        if not self.ahead:
            return await super()._between_slices()
        await asyncio.sleep(AHEAD_PAUSE_S)
        while LabRun.playing_for_learners and not self.stopped:
            await asyncio.sleep(AHEAD_WAIT_S)
        return not self.stopped

    async def play(
        self,
        on_progress: Callable[[float], None],
        on_learners_run: Callable[[WorkloadRun], None] | None = None,
    ) -> LabResult | None:
        """Run to the end; None if stopped first. ``on_learners_run`` gets the learner's run first
        when the overlay's has still to play."""
        with cycle_collector_paused() if self.ahead else played_for_a_learner():
            result = await self._play(on_progress, on_learners_run)
        if result is None and self._beside is not None:
            # Stopped: the side's run is kept when it comes (for the knobs set back).
            asyncio.wrap_future(self._beside).add_done_callback(self._keep_played_beside)
        return result

    async def _play(
        self,
        on_progress: Callable[[float], None],
        on_learners_run: Callable[[WorkloadRun], None] | None,
    ) -> LabResult | None:
        played = dict(self._known)
        started = time.perf_counter()
        for runner in self.runners:
            learners = played.get(self.keys[0])
            if on_learners_run is not None and learners is not None:
                on_learners_run(learners)
                on_learners_run = None
                if not await self._between_slices():
                    return None
            run = await self._played_here(runner, on_progress)
            if run is None:
                return None
            played[(runner.engine_name, runner.workload)] = run
        if self._beside is not None:
            here = time.perf_counter() - started
            deadline = started + max(BESIDE_DEADLINE_S, BESIDE_DEADLINE_TIMES * here)
            waiting = asyncio.wrap_future(self._beside)
            if on_learners_run is not None:
                # The overlay's run most often ends a moment after the learner's: one
                # draw of both then comes sooner than two, one after the other.
                await asyncio.wait([waiting], timeout=BESIDE_GRACE_S)
                if not waiting.done():
                    on_learners_run(played[self.keys[0]])
            run = await self._played_beside(waiting, deadline, on_progress)
            if run is None:
                return None
            played[("vllm", run.workload)] = run
        asked, *compared = self.workloads
        per_engine = [
            (played[(e, asked)], played[(e, compared[0])] if compared else None)
            for e in self.engines
        ]
        (run, compare), *more = per_engine
        return LabResult(self.preset, run, compare, tuple(more))

    async def _played_here(
        self, runner: Runner, on_progress: Callable[[float], None]
    ) -> WorkloadRun | None:
        """The runner's run, played here in slices; None if stopped first."""
        prepare_every, steps_every = (
            (AHEAD_PREPARE_EVERY_REQUESTS, AHEAD_EVERY_STEPS)
            if self.ahead
            else (PREPARE_EVERY_REQUESTS, PROGRESS_EVERY_STEPS)
        )
        # Hashing thousands of prompts at once would hold the page for seconds.
        # (Another LabRun may finish this shared runner while this one waits.)
        while not runner.prepare(prepare_every):
            on_progress(self.progress)
            if not await self._between_slices():
                return None
        if not await self._advance(runner, steps_every, lambda: on_progress(self.progress)):
            return None
        run = self.finished.get(runner.workload, runner.engine_name)
        if run is None:
            run = runner.result()
            self.finished.put(run)
            self.in_progress.finished(runner)
        # Its pool goes now, by reference counting: the collector need not walk it.
        runner.release()
        return run

    async def _played_beside(
        self,
        waiting: asyncio.Future[WorkloadRun],
        deadline: float,
        on_progress: Callable[[float], None],
    ) -> WorkloadRun | None:
        """The run a side plays (here if that fails, or has not come by ``deadline``); None if
        stopped."""
        while not waiting.done() and time.perf_counter() < deadline:
            await asyncio.wait([waiting], timeout=AHEAD_WAIT_S)
            # (a slow side must still turn Stop on and say the run is not done)
            on_progress(self.progress)
            if self.stopped:
                return None
        if waiting.done() and waiting.exception() is None:
            return self._kept(waiting.result())
        workload = self.workloads[1]
        if not waiting.done():
            self._sides.stalled(workload)
            waiting.add_done_callback(self._keep_played_beside)
        # The side died (killed, out of memory), the run failed there or the side is
        # stalled: it plays here, where a failure is reported as any other.
        self._beside = None  # (counted in the progress as a run here now)
        runner = self.in_progress.runner(workload)
        self.runners.append(runner)
        return await self._played_here(runner, on_progress)

    def _kept(self, run: WorkloadRun) -> WorkloadRun:
        """The run as the finished runs keep it (another session's copy, if there)."""
        known = self.finished.get(run.workload, run.engine)
        if known is not None:
            return known
        self.finished.put(run)
        return run

    def _keep_played_beside(self, done: asyncio.Future[WorkloadRun]) -> None:
        """(on the event loop's thread, where the finished runs are kept)"""
        if not done.cancelled() and done.exception() is None:
            self._kept(done.result())


def likely_next(workload: Workload) -> list[Workload]:
    """The knob changes the presets' experiments make: salt, prepended token, reset mode."""
    salted = [workload.replace(salt=salt) for salt in SALT_POLICIES if salt != workload.salt]
    prepended = workload.replace(prepend_token=not workload.prepend_token)
    reset_modes = [
        workload.replace(reset_mode=mode)
        for mode in MODES
        if workload.reset_step and mode != workload.reset_mode
    ]
    return [*salted, prepended, *reset_modes]


class RunAhead:
    """Plays the runs of ``likely_next`` knob changes (first the overlay's, if off) while the lab is
    idle, so they show at once; ``stop()`` when the learner acts. One plays at a time per
    process, so a click waits for one slice ahead at most."""

    # The RunAhead playing now, in this process; the others wait for their turn.
    playing: RunAhead | None = None

    def __init__(
        self,
        preset: Preset,
        workload: Workload,
        overlay: bool,
        engines: Sequence[str] = ("vllm",),
    ) -> None:
        self.preset = preset
        self.engines = tuple(engines)
        # (workload, overlay): the overlay switched on, then the knob changes.
        ahead = [(workload, True)] if not overlay and preset.compare else []
        ahead += [(w, overlay) for w in likely_next(workload)]
        self.runs = [(w, o) for w, o in ahead if w.total_tokens <= AHEAD_MAX_TOKENS]
        self.stopped = False
        self._current: LabRun | None = None

    def stop(self) -> None:
        self.stopped = True
        if self._current is not None:
            self._current.stop()

    async def play(self) -> bool:
        """Play every run ahead, one after the other; False if stopped first."""
        await asyncio.sleep(AHEAD_START_S)
        while RunAhead.playing is not None and not self.stopped:
            await asyncio.sleep(AHEAD_WAIT_S)
        if self.stopped:
            return False
        RunAhead.playing = self
        try:
            return await self._play()
        finally:
            RunAhead.playing = None

    async def _play(self) -> bool:
        for workload, overlay in self.runs:
            if self.stopped:
                return False
            # Built only now: a LabRun's runners hold their pools.
            run = self._current = LabRun(
                self.preset, workload, overlay, ahead=True, engines=self.engines
            )
            if await run.play(lambda _: None) is None:
                return False
        self._current = None
        return not self.stopped


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
