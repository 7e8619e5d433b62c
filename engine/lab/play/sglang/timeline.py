"""Play a scenario on SGLang 0.5.23's model (engine/sglang/) and record every step.

The SGLang counterpart of engine/lab/play/vllm/timeline.py, which plays vLLM and is left as
it was: ``build_sglang_timeline(scenario, mode)`` gives an ``SGLangTimeline`` whose
steps carry an ``SGLangSnapshot`` (the radix tree, the slot pool, the requests),
``SGLangStepFacts`` (the walks, splits, evictions and slots of the step) and the
lines of engine/sglang's own source that ran, traced by the same tracer as vLLM's
(engine/lab/play/line_tracer.py). A mode is SGLang's schedule policy: ``fcfs`` (its default)
or ``lpm``. A pure function of its inputs: the same scenario and mode give
byte-identical JSON on every run.

How a scenario's actions play here: ``add_request`` adds a request whose
``cache_salt`` becomes its ``extra_key`` (the tree's namespace); ``step`` is one
``Scheduler.step``, one iteration of SGLang's event loop: a prefill batch of what the
ordered queue admits, or, when nothing is admitted, a token for each running request
(retracting some if their slots cannot be had); the finished are released;
``reset_prefix_cache`` is SGLang's ``flush_cache``,
refused unless nothing waits or runs. vLLM-only actions are refused when the
scenario is loaded (engine/lab/play/scenario.py, ``validate_sglang``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

import engine.sglang
from engine.lab.play.line_tracer import SourceIndex, package_modules, untraced
from engine.lab.play.records import LogLine
from engine.lab.play.scenario import Action, Scenario, ScenarioError, sglang_refusal
from engine.lab.play.sglang.facts import SGLangStepFacts, TreeRecorder
from engine.lab.play.sglang.narration import describe_sglang_step, fill_sglang_narration
from engine.lab.play.sglang.snapshot import (
    NodeIds,
    SGLangCounters,
    SGLangSnapshot,
    take_sglang_snapshot,
)
from engine.lab.play.timeline import (
    START_NARRATION_KEY,
    StepRecord,
    TimelineRecord,
    play_script,
    step_focus,
)
from engine.sglang.allocator import make_allocator
from engine.sglang.radix_cache import RadixCache
from engine.sglang.scheduler import Req, Scheduler

ENGINE = "sglang"

# The modules whose lines the code panel may show: every module of SGLang's model.
TRACED_MODULES = package_modules(engine.sglang)

# The function a step is "about": the first of these that ran (a decode step's is
# Scheduler.update_running_batch: its schedule admitted nothing).
FOCUS: dict[str, tuple[str, ...]] = {
    "add_request": ("Scheduler.add_request",),
    "step": ("Scheduler.schedule",),
    "run_until_idle": ("Scheduler.schedule",),
    "reset_prefix_cache": ("RadixCache.reset",),
}

ENGINE_DEAD_RESULT = "not run: the scheduler is dead (an assertion failed in it)"

# SGLang's prefill-batch log line (managers/scheduler_components/metrics_reporter.py:
# 753-760) with the fields this model has: no timing, CUDA graph or pending tokens.
PREFILL_LOGGER = "sglang.srt.managers.scheduler_components.metrics_reporter"
# flush_cache's own lines (managers/scheduler.py:5538, 5541-5545), and a retraction's
# (:4526-4537)
FLUSH_LOGGER = RETRACT_LOGGER = "sglang.srt.managers.scheduler"
# retract_decode's line for a request aborted out of memory (schedule_batch.py:3533-3535)
BATCH_LOGGER = "sglang.srt.managers.schedule_batch"


@dataclass(frozen=True)
class SGLangStep(StepRecord[SGLangSnapshot, SGLangStepFacts]):
    """A step of SGLang's timeline; its facts are the walks, splits, evictions and slots."""


@dataclass(frozen=True)
class SGLangTimeline(TimelineRecord):
    scenario: str
    title: str
    summary: str
    mode: str  # the schedule policy: "fcfs" or "lpm"
    modes: tuple[str, ...]
    page_size: int
    num_slots: int
    eviction_policy: str
    traced: bool
    steps: tuple[SGLangStep, ...]
    narration: tuple[tuple[str, str], ...]  # key -> text, for this mode
    sources: tuple[tuple[str, str], ...]  # file -> text, for every traced file
    engine: str = ENGINE

    # what a reader of either timeline checks first (Timeline.engine is "vllm")
    ENGINES: ClassVar[tuple[str, ...]] = ("vllm", ENGINE)

    def described(self, step: SGLangStep, before: SGLangSnapshot | None) -> str:
        return describe_sglang_step(step.facts, before, step.snapshot)

    def filled(self, template: str, step: SGLangStep) -> str:
        return fill_sglang_narration(template, step.facts, step.snapshot)


@cache
def source_indexes() -> tuple[SourceIndex, ...]:
    return tuple(SourceIndex(module) for module in TRACED_MODULES)


def check_sglang_mode(scenario: Scenario, mode: str) -> str:
    refusal = sglang_refusal(scenario)
    if refusal is not None:
        raise ScenarioError(refusal)
    if mode not in scenario.sglang.modes:
        raise ScenarioError(
            f"unknown mode {mode!r} for scenario {scenario.name!r} on SGLang "
            f"(one of {', '.join(scenario.sglang.modes)})"
        )
    return mode


class _Run:
    """The live model while a timeline is recorded."""

    def __init__(self, scenario: Scenario, mode: str) -> None:
        options = scenario.sglang
        self.allocator = make_allocator(scenario.sglang_slots(), options.page_size)
        self.tree_cache = RadixCache(
            self.allocator,
            page_size=options.page_size,
            eviction_policy=options.eviction_policy,
            enable_kv_cache_events=True,
        )
        self.scheduler = Scheduler(self.allocator, self.tree_cache, schedule_policy=mode)
        self.ids = NodeIds()
        self.requests: list[Req] = []
        self.hit_tokens: dict[str, int] = {}  # rid -> prefix_len at admission
        self.counters = SGLangCounters()
        self.logs: list[LogLine] = []
        self.engine_dead = False
        self.step_admitted: list[Req] = []  # by the step being played
        self.recorder = TreeRecorder(self.scheduler, self.ids, self._admitted)

    def _admitted(self, admitted: list[Req]) -> None:
        """After a schedule, before the model runs: the hits, and SGLang's log line."""
        self.step_admitted = list(admitted)
        if not admitted:
            return
        with untraced():
            hits = {req.rid: req.prefix_len for req in admitted}
            self.hit_tokens.update(hits)
            queries = sum(len(req.origin_input_ids) for req in admitted)
            self.counters = dataclasses.replace(
                self.counters,
                queries=self.counters.queries + queries,
                hits=self.counters.hits + sum(hits.values()),
            )
            size = self.allocator.size
            used = size - (self.allocator.available_size() + self.tree_cache.evictable_size())
            self.logs.append(
                LogLine(
                    "INFO",
                    PREFILL_LOGGER,
                    f"Prefill batch, #new-seq: {len(admitted)}, "
                    f"#new-token: {queries - sum(hits.values())}, "
                    f"#cached-token: {sum(hits.values())}, "
                    f"token usage: {used / size:.2f}, "
                    f"#running-req: {len(self.scheduler.running) - len(admitted)}, "
                    f"#queue-req: {len(self.scheduler.waiting_queue)}, ",
                )
            )

    def perform(self, action: Action) -> str | None:
        if self.engine_dead:
            return ENGINE_DEAD_RESULT
        handler = getattr(self, f"_do_{action.kind}")
        try:
            result: str | None = handler(action)
        except (ValueError, RuntimeError) as error:
            return f"{type(error).__name__}: {error}"
        except AssertionError as error:
            self.engine_dead = True
            return f"AssertionError: {error}"
        return result

    def _do_add_request(self, action: Action) -> str | None:
        spec = action.request
        assert spec is not None
        req = Req(
            spec.request_id,
            list(spec.prompt_token_ids),
            max_new_tokens=spec.max_tokens,
            extra_key=spec.cache_salt,
        )
        self.scheduler.add_request(req)
        self.requests.append(req)
        return None

    def _do_step(self, action: Action) -> str | None:
        self.step_admitted = []
        running_before = list(self.scheduler.running)
        finished = self.scheduler.step()
        parts = [
            f"{req.rid} ({len(req.origin_input_ids)} tokens, {self.hit_tokens[req.rid]} cached)"
            for req in self.step_admitted
        ]
        done = [req.rid for req in finished]
        # a retracted request waits again; an aborted one left unfinished
        retracted = [req.rid for req in self.scheduler.waiting_queue if req in running_before]
        aborted = [req.rid for req in running_before if req.to_finish is not None]
        # a step runs a prefill batch or, with none admitted, the running batch's decode
        decoded = (
            []
            if self.step_admitted
            else [
                req.rid
                for req in running_before
                if req.rid not in retracted and req.rid not in aborted
            ]
        )
        text = "; ".join(
            part
            for part in (
                "prefill " + ", ".join(parts) if parts else "",
                "retract " + ", ".join(retracted) if retracted else "",
                "abort " + ", ".join(aborted) if aborted else "",
                "decode " + ", ".join(decoded) if decoded else "",
                "finished " + ", ".join(done) if done else "",
            )
            if part
        )
        return text or "nothing to run"

    _do_run_until_idle = _do_step

    def _do_reset_prefix_cache(self, action: Action) -> str | None:
        """SGLang's ``flush_cache``: only when nothing waits or runs."""
        scheduler = self.scheduler
        if scheduler.waiting_queue or scheduler.running:
            self.logs.append(
                LogLine(
                    "WARNING",
                    "root",
                    "Cache not flushed because there are pending requests. "
                    f"#queue-req: {len(scheduler.waiting_queue)}, "
                    f"#running-req: {len(scheduler.running)}",
                )
            )
            return "False"
        self.tree_cache.reset()
        self.allocator.clear()
        self.counters = dataclasses.replace(self.counters, resets=self.counters.resets + 1)
        self.logs.append(LogLine("INFO", FLUSH_LOGGER, "Cache flushed successfully!"))
        return "True"

    def unfinished(self) -> bool:
        return bool(self.scheduler.waiting_queue or self.scheduler.running)

    def snapshot(self, facts: SGLangStepFacts) -> SGLangSnapshot:
        self.counters = dataclasses.replace(
            self.counters,
            evicted_tokens=self.counters.evicted_tokens + facts.evicted_tokens,
            evicted_nodes=self.counters.evicted_nodes + len(facts.evictions),
            splits=self.counters.splits + len(facts.splits),
        )
        retraction = facts.retraction
        if retraction is not None:
            # retract_decode logs an abort before update_running_batch logs the retraction
            self.logs += [
                LogLine(
                    "WARNING",
                    BATCH_LOGGER,
                    f"retract_decode: aborted last request {rid} due to OOM",
                )
                for rid in retraction.aborted
            ]
            self.logs.append(
                LogLine(
                    "WARNING",
                    RETRACT_LOGGER,
                    "KV cache pool is full. Retract requests. "
                    f"#retracted_reqs: {len(retraction.retracted)}, "
                    f"#new_tokens_gained: {retraction.tokens_gained}, "
                    f"#new_token_ratio: {retraction.old_ratio:.4f} -> {retraction.new_ratio:.4f}",
                )
            )
        logs, self.logs = tuple(self.logs), []
        return take_sglang_snapshot(
            self.scheduler,
            self.requests,
            self.hit_tokens,
            self.ids,
            self.counters,
            logs,
            self.tree_cache.take_events(),
        )


def _label(action: Action) -> str:
    if action.kind == "reset_prefix_cache":
        return "flush_cache()"
    if action.kind == "add_request":
        assert action.request is not None
        spec = action.request
        extra = f", extra_key={spec.cache_salt!r}" if spec.cache_salt is not None else ""
        return f"add_request({spec.request_id!r}, {len(spec.prompt_token_ids)} tokens{extra})"
    return action.label("default")


def count_sglang_steps(scenario: Scenario, mode: str) -> int:
    run = _Run(scenario, check_sglang_mode(scenario, mode))
    for action in scenario.setup:
        run.perform(action)
    steps = 0
    for _ in play_script(run, scenario.script, None):
        run.recorder.take()  # each step's facts, as a timeline takes them
        steps += 1
    return steps


def build_sglang_timeline(scenario: Scenario, mode: str, trace: bool = True) -> SGLangTimeline:
    """Play ``scenario`` on SGLang's model under schedule policy ``mode``; step 0 is
    the state after the setup."""
    checked = check_sglang_mode(scenario, mode)
    run = _Run(scenario, checked)
    for action in scenario.setup:
        run.perform(action)
    facts = run.recorder.take()
    steps = [
        SGLangStep(0, "start", START_NARRATION_KEY, None, run.snapshot(facts), (), None, facts)
    ]
    for action, result, code in play_script(
        run, scenario.script, source_indexes() if trace else None
    ):
        facts = run.recorder.take()
        names = (action.focus, *FOCUS[action.kind])
        if facts.forward_mode == "decode":
            names = (action.focus, "Scheduler.update_running_batch")
        focus = step_focus(code, names)
        steps.append(
            SGLangStep(
                index=len(steps),
                label=_label(action),
                narration_key=action.say,
                result=result,
                snapshot=run.snapshot(facts),
                code=code,
                focus=focus,
                facts=facts,
            )
        )
    return SGLangTimeline(
        scenario=scenario.name,
        title=scenario.title,
        summary=scenario.summary,
        mode=checked,
        modes=scenario.sglang.modes,
        page_size=scenario.sglang.page_size,
        num_slots=scenario.sglang_slots(),
        eviction_policy=scenario.sglang.eviction_policy,
        traced=trace,
        steps=tuple(steps),
        narration=tuple(scenario.sglang.narration_for(checked).items()),
        sources=tuple((index.file, index.text) for index in source_indexes()) if trace else (),
    )
