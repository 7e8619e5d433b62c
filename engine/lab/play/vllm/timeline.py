"""Play a scenario in a mode and record every step: state, log, events, and the code that ran.

``build_timeline(scenario, mode)`` is a pure function of its inputs: the same
scenario and mode give byte-identical JSON on every machine, in CPython and in
Pyodide alike, so the browser can be checked against the test suite.
"""

from __future__ import annotations

import gc
import logging
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import engine.vllm
from engine.lab.play.line_tracer import SourceIndex, package_modules
from engine.lab.play.scenario import (
    DEFAULT_MAX_NUM_SEQS,
    Action,
    Mode,
    Scenario,
    check_mode,
    reserve_full_isl,
    reset_flags,
    runs_keep_mode,
)
from engine.lab.play.timeline import (
    START_NARRATION_KEY,
    StepRecord,
    TimelineRecord,
    play_script,
    step_focus,
)
from engine.lab.play.vllm.facts import PoolRecorder, StepFacts
from engine.lab.play.vllm.narration import describe_step, fill_narration
from engine.lab.play.vllm.snapshot import Snapshot, SnapshotTaker, Stats, take_snapshot
from engine.lab.play.vllm.variants import engine_core, reset_prefix_cache, scheduler_class
from engine.vllm import core
from engine.vllm.api_server import APIServer, HTTPRequest, KeepModeEngineCoreClient
from engine.vllm.aux_output import AuxOutputSchedulerConnector
from engine.vllm.kv_offload import SimpleCPUOffloadScheduler, SimpleCPUOffloadSchedulerWithoutFix
from engine.vllm.logger import LOGGER_ROOTS
from engine.vllm.request import Request, RequestStatus

# The modules whose lines the code panel may show: every module of the model of
# vLLM (the package engine.vllm).
TRACED_MODULES = package_modules(engine.vllm)

# The function a step is "about", whose last line is marked as the current one:
# the first of these that ran. Before them come the function an error was raised
# in, then the scenario's own choice (an action's ``focus``).
FOCUS: dict[str, tuple[str, ...]] = {
    "add_request": ("Request.__init__",),
    "step": ("Scheduler.schedule",),
    "run_until_idle": ("Scheduler.schedule",),
    "reset_prefix_cache": ("BlockPool.reset_prefix_cache", "KeepModeBlockPool.reset_prefix_cache"),
    "abort": ("Scheduler.finish_requests",),
    "http_reset": ("reset_prefix_cache", "reset_prefix_cache_without_flag_check"),
}

ENGINE_DEAD_RESULT = "not run: the engine core is dead (EngineDeadError)"


@dataclass(frozen=True)
class Step(StepRecord[Snapshot, StepFacts]):
    """A step of vLLM's timeline; its facts are what the pool did, block by block."""


@dataclass(frozen=True)
class Timeline(TimelineRecord):
    scenario: str
    title: str
    summary: str
    mode: Mode
    modes: tuple[Mode, ...]
    num_gpu_blocks: int
    block_size: int
    traced: bool
    steps: tuple[Step, ...]
    narration: tuple[tuple[str, str], ...]  # key -> text, for this mode
    sources: tuple[tuple[str, str], ...]  # file -> text, for every traced file

    # The engine played: vLLM's model. Not a field, so a vLLM timeline's JSON is as it
    # was; an SGLang timeline (engine/lab/play/sglang/timeline.py) says "sglang" in its own.
    engine: ClassVar[str] = "vllm"

    def described(self, step: Step, before: Snapshot | None) -> str:
        return describe_step(step.facts, before, step.snapshot)

    def filled(self, template: str, step: Step) -> str:
        return fill_narration(template, step.facts, step.snapshot, self.block_size)


@cache
def source_indexes() -> tuple[SourceIndex, ...]:
    return tuple(SourceIndex(module) for module in TRACED_MODULES)


class _LogCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            # A logged exception, as a log file shows it: the line, then the
            # traceback. Its frames are left out (they name paths on this machine).
            error = record.exc_info[1]
            message = record.getMessage()
            message += "" if message.endswith("\n") else "\n"
            message += "Traceback (most recent call last):\n  ...\n"
            message += "".join(traceback.format_exception_only(error)).rstrip("\n")
            record = logging.makeLogRecord(
                {**record.__dict__, "msg": message, "args": None, "exc_info": None}
            )
        self.records.append(record)

    def take(self) -> list[logging.LogRecord]:
        records, self.records = self.records, []
        return records


@contextmanager
def _collect_logs() -> Iterator[_LogCollector]:
    collector = _LogCollector()
    loggers = [logging.getLogger(name) for name in LOGGER_ROOTS]
    for logger in loggers:
        logger.addHandler(collector)
    try:
        yield collector
    finally:
        for logger in loggers:
            logger.removeHandler(collector)


def _raised_in(error: BaseException) -> str | None:
    """The qualified name of the function an exception was raised in."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_qualname if tb is not None else None


def _assertion_text(error: AssertionError) -> str:
    """The assertion's message or, when it has none, its source line."""
    frames = traceback.extract_tb(error.__traceback__)
    return str(error) or (frames[-1].line if frames and frames[-1].line else "")


class _Run:
    """The live engine while a timeline is recorded."""

    def __init__(self, scenario: Scenario, mode: Mode) -> None:
        self.mode = mode
        options = scenario.engine
        connector = None
        if options.offload:
            offload_cls = (
                SimpleCPUOffloadScheduler
                if options.keep_mode_fixes
                else SimpleCPUOffloadSchedulerWithoutFix
            )
            connector = offload_cls(options.num_cpu_blocks, scenario.block_size)
        # vLLM 0.33.0's engine, or keep mode's proposed one where the play needs it.
        scheduler_cls = scheduler_class(runs_keep_mode(scenario, mode), options.keep_mode_fixes)
        self.scheduler = scheduler_cls(
            scenario.num_gpu_blocks,
            scenario.block_size,
            max_num_batched_tokens=scenario.max_num_batched_tokens,
            max_num_seqs=DEFAULT_MAX_NUM_SEQS,
            connector=connector,
            aux_output_connector=AuxOutputSchedulerConnector() if options.aux_output else None,
            scheduler_reserve_full_isl=reserve_full_isl(scenario, mode),
            watermark=scenario.watermark,
        )
        self.engine = engine_core(self.scheduler)
        self.recorder = PoolRecorder(self.scheduler.kv_cache_manager.block_pool)
        self.snapshot_taker = SnapshotTaker()
        # The HTTP reset's handlers are keep mode's, so a play with one runs keep
        # mode's engine (runs_keep_mode).
        self.engine_client = KeepModeEngineCoreClient(self.engine)
        self.requests: list[Request] = []  # arrival order; finished ones stay visible
        self.stats = Stats()
        self.engine_dead = False
        self.error_site: str | None = None  # the function the action's error came from

    def perform(self, action: Action) -> str | None:
        """Run one action; the model's own errors become the step's result.

        A failed assertion takes the engine core down, as it does in vLLM: the
        step records it, and every later action is not run.
        """
        self.error_site = None
        if self.engine_dead:
            return ENGINE_DEAD_RESULT
        handler: Callable[[Action], str | None] = getattr(self, f"_do_{action.kind}")
        try:
            return handler(action)
        except (ValueError, RuntimeError) as error:
            self.error_site = _raised_in(error)
            return f"{type(error).__name__}: {error}"
        except AssertionError as error:
            message = _assertion_text(error)
            self.error_site = _raised_in(error)
            self.engine_dead = True
            core.logger.exception("EngineCore encountered a fatal error.")
            return f"AssertionError: {message}"

    def _do_add_request(self, action: Action) -> str | None:
        spec = action.request
        assert spec is not None
        new_request = Request(
            spec.request_id,
            spec.prompt_token_ids,
            max_tokens=spec.max_tokens,
            block_hasher=self.scheduler.request_block_hasher,
            cache_salt=spec.cache_salt,
            lora_name=spec.lora_name,
            prompt_logprobs=spec.prompt_logprobs,
        )
        self.engine.add_request(new_request)
        self.requests.append(new_request)
        return None

    def _do_step(self, action: Action) -> str | None:
        result = self.engine.step()
        parts = [
            f"{rid}: {n} token{'' if n == 1 else 's'}"
            for rid, n in result.scheduler_output.num_scheduled_tokens.items()
        ]
        text = "scheduled " + (", ".join(parts) if parts else "nothing")
        if result.scheduler_output.preempted_req_ids:
            text += "; preempted " + ", ".join(result.scheduler_output.preempted_req_ids)
        if result.finished_req_ids:
            text += "; finished " + ", ".join(result.finished_req_ids)
        return text

    _do_run_until_idle = _do_step  # one engine step; build_timeline repeats it

    def unfinished(self) -> bool:
        return self.scheduler.has_unfinished_requests()

    def _do_reset_prefix_cache(self, action: Action) -> str | None:
        return str(reset_prefix_cache(self.engine, **reset_flags(action, self.mode)))

    def _do_abort(self, action: Action) -> str | None:
        assert action.request_id is not None
        self.scheduler.finish_requests([action.request_id], RequestStatus.FINISHED_ABORTED)
        return None

    def _do_http_reset(self, action: Action) -> str | None:
        # The endpoint exists only in development mode (VLLM_SERVER_DEV_MODE=1).
        server = APIServer(self.engine_client, dev_mode=True, check_reset_flags=action.check_flags)
        response = server.handle(HTTPRequest("POST", "/reset_prefix_cache", action.query or ""))
        return f"HTTP {response.status_code} {response.reason} {response.body}"

    def snapshot(self, logs: list[logging.LogRecord]) -> Snapshot:
        """The state after an action; collecting stats and events is not part of the action."""
        self.stats = self.stats.plus(self.scheduler.make_stats())
        events = self.scheduler.kv_cache_manager.take_events()
        return take_snapshot(
            self.snapshot_taker,
            self.scheduler,
            self.requests,
            logs,
            events,
            self.stats,
            aux_output_worker=self.engine.aux_output_worker,
            engine_dead=self.engine_dead,
        )


def count_steps(scenario: Scenario, mode: str) -> int:
    """How many steps ``build_timeline`` records after the start, without recording them."""
    run = _Run(scenario, check_mode(scenario, mode))
    with _collect_logs():
        for action in scenario.setup:
            run.perform(action)
        return sum(1 for _ in play_script(run, scenario.script, None))


@contextmanager
def _collection_paused() -> Iterator[None]:
    """The cyclic garbage collector off while a timeline is built: a build makes hundreds of
    thousands of objects that all stay (its records), and it dropped none of them. Left on,
    it traversed them again and again, and every other build of a large playground ran a
    full collection of every timeline kept (100-150 ms of a 0.4 s build)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def build_timeline(scenario: Scenario, mode: str, trace: bool = True) -> Timeline:
    """Play ``scenario`` in ``mode``; step 0 is the state after the setup."""
    with _collection_paused():
        return _build_timeline(scenario, mode, trace)


def _build_timeline(scenario: Scenario, mode: str, trace: bool) -> Timeline:
    checked_mode = check_mode(scenario, mode)
    run = _Run(scenario, checked_mode)
    steps: list[Step] = []
    with _collect_logs() as logs:
        for action in scenario.setup:
            run.perform(action)
        steps.append(
            Step(
                0,
                "start",
                START_NARRATION_KEY,
                None,
                run.snapshot(logs.take()),
                (),
                None,
                run.recorder.take(),
            )
        )
        played = play_script(run, scenario.script, source_indexes() if trace else None)
        for action, result, code in played:
            focus = step_focus(code, (run.error_site, action.focus, *FOCUS[action.kind]))
            steps.append(
                Step(
                    index=len(steps),
                    label=action.label(checked_mode),
                    narration_key=action.say,
                    result=result,
                    snapshot=run.snapshot(logs.take()),
                    code=code,
                    focus=focus,
                    facts=run.recorder.take(),
                )
            )
    return Timeline(
        scenario=scenario.name,
        title=scenario.title,
        summary=scenario.summary,
        mode=checked_mode,
        modes=scenario.modes,
        num_gpu_blocks=scenario.num_gpu_blocks,
        block_size=scenario.block_size,
        traced=trace,
        steps=tuple(steps),
        narration=tuple(scenario.narration_for(checked_mode).items()),
        sources=tuple((index.file, index.text) for index in source_indexes()) if trace else (),
    )
