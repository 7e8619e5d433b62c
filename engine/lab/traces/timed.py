"""A trace slice replayed with time: requests arrive by their timestamps through the
scheduler, on vLLM's ``Scheduler`` + ``EngineCore`` or SGLang's model.

Each engine step is ``step_ms`` ms of the trace's clock. Step k first adds every request
whose timestamp has come (relative to the slice's first one), then runs one step; while the
engine is idle the clock jumps to the next arrival instead of stepping through the gap. Each
request prefills its ``input_length`` prompt (the derived tokens of
engine/lab/traces/request_trace.py) and decodes ``output_length`` tokens (at least one). So
concurrency, chunked prefill, waiting and, on vLLM, preemption and the survival fraction
show up, in the workload lab's rows (one per engine step, engine/lab/workload/workload.py's
``COLUMNS``) with each step's time beside them.

The runners are the workload lab's (``WorkloadRunner`` and ``SGLangWorkloadRunner``: the
same stepping loop and rows) with the trace's requests and arrivals in place of a
workload's: only ``_make_request`` and ``_arrive`` differ.

Why ``step_ms`` = 25 by default: it is the order of one decode step (the time between two
tokens) of a large model on one GPU node, the latency serving systems aim for; a step costs
the same whatever it computes, a stand-in for the GPU. A smaller ``step_ms`` packs the
trace's arrivals into fewer steps (more concurrency), a larger one spreads them out.

A request that could never be admitted, even alone (its prompt and output above the pool),
would block the queue forever: it is left out and counted (``skipped_requests``).

Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.lab.play.scenario import DEFAULT_MAX_NUM_BATCHED_TOKENS
from engine.lab.traces.replay import Stop
from engine.lab.traces.request_trace import TRACE_BLOCK_TOKENS, TraceEntry, prompt_token_ids
from engine.lab.traces.vllm.replay import HashedTrace, num_gpu_blocks_for
from engine.lab.workload.run import COLUMNS, PROGRESS_EVERY_STEPS, WorkloadRun
from engine.lab.workload.sglang.runner import SGLANG_PAGE_SIZE, SGLangWorkloadRunner
from engine.lab.workload.vllm.runner import WorkloadRunner
from engine.lab.workload.workload import (
    MAX_BATCHED_TOKENS,
    MAX_BLOCK_SIZE,
    MAX_POOL_BLOCKS,
    MAX_REQUESTS,
    MAX_TOTAL_TOKENS,
    Workload,
    WorkloadError,
)
from engine.sglang.schedule_policy import fits_an_empty_pool
from engine.sglang.scheduler import Req
from engine.vllm.kv_cache_manager import cdiv
from engine.vllm.kv_cache_utils import BlockHash
from engine.vllm.request import Request

DEFAULT_STEP_MS = 25.0
# The workload lab's largest SGLang pool, in KV slots.
MAX_SGLANG_SLOTS = MAX_POOL_BLOCKS * MAX_BLOCK_SIZE
TIMED_ENGINES = ("vllm", "sglang")

# Said beside every timed result (CLI, JSON, docs): what the replay cannot show.
CANNOT_SHOW = (
    "The trace holds no output tokens' content, so a later turn never hits on an earlier "
    "turn's output, only on the prompt they share; equal hash_ids are equal 512-token "
    "blocks and nothing finer is known; every engine step takes the same step_ms, "
    "whatever it computes."
)


def default_unit(engine: str) -> int:
    """The block size (vLLM) or page size (SGLang) when none is asked: the trace's 512
    on vLLM, SGLang's default page size 1."""
    return TRACE_BLOCK_TOKENS if engine == "vllm" else SGLANG_PAGE_SIZE


@dataclass(frozen=True)
class TimedKnobs:
    """The knobs of a timed replay. ``block_size`` None: the engine's default
    (``default_unit``); on SGLang it is the page size. ``max_num_batched_tokens`` is
    vLLM's batch budget (SGLang's modelled scheduler does not chunk a prefill)."""

    capacity_tokens: int
    engine: str = "vllm"
    block_size: int | None = None
    step_ms: float = DEFAULT_STEP_MS
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS

    @property
    def unit(self) -> int:
        """The block size (vLLM) or page size (SGLang) the replay uses."""
        return self.block_size or default_unit(self.engine)

    def problems(self, entries: Sequence[TraceEntry]) -> dict[str, str]:
        """Every knob that cannot be used with this slice, with the reason: the workload
        lab's limits (a slice's every token is hashed and scheduled, as a workload's)."""
        found: dict[str, str] = {}
        if self.engine not in TIMED_ENGINES:
            found["engine"] = (
                f"engine must be one of {', '.join(TIMED_ENGINES)}, not {self.engine!r}"
            )
        if not (math.isfinite(self.step_ms) and self.step_ms > 0):
            found["step_ms"] = f"step_ms must be a positive number of ms, not {self.step_ms}"
        unit = self.unit
        if not 1 <= unit <= MAX_BLOCK_SIZE:
            found["block_size"] = (
                f"block_size must be between 1 and {MAX_BLOCK_SIZE:,}, not {unit:,}"
            )
        batch = self.max_num_batched_tokens
        if not 1 <= batch <= MAX_BATCHED_TOKENS:
            found["max_num_batched_tokens"] = (
                f"max_num_batched_tokens must be between 1 and {MAX_BATCHED_TOKENS:,}, "
                f"not {batch:,}"
            )
        found.update(_slice_problems(entries))
        if "block_size" not in found:
            found.update(_pool_problems(self.capacity_tokens, unit, self.engine))
        return found

    def check(self, entries: Sequence[TraceEntry]) -> None:
        """Raise WorkloadError for the first knob that cannot be used."""
        for knob, message in self.problems(entries).items():
            raise WorkloadError(knob, message)


def _slice_problems(entries: Sequence[TraceEntry]) -> dict[str, str]:
    if len(entries) > MAX_REQUESTS:
        return {
            "requests": f"the slice has {len(entries):,} requests, more than "
            f"{MAX_REQUESTS:,} (take fewer requests or a shorter window)"
        }
    total = sum(e.input_length + _output_tokens(e) for e in entries)
    if total > MAX_TOTAL_TOKENS:
        return {
            "requests": f"the slice's {len(entries):,} requests are {total:,} tokens, more "
            f"than {MAX_TOTAL_TOKENS:,} (take fewer requests or a shorter window)"
        }
    return {}


def _pool_problems(capacity_tokens: int, block_size: int, engine: str) -> dict[str, str]:
    """vLLM: at most the workload lab's MAX_POOL_BLOCKS blocks. SGLang (slots of
    ``block_size``-token pages): at most the slots of the workload lab's largest SGLang
    pool (its blocks times the largest block size)."""
    blocks = capacity_tokens // block_size
    if blocks < 1:
        unit = "block" if engine == "vllm" else "page"
        return {
            "capacity_tokens": f"a capacity of {capacity_tokens:,} tokens holds no "
            f"{block_size}-token {unit}"
        }
    if engine == "vllm" and blocks > MAX_POOL_BLOCKS:
        return {
            "capacity_tokens": f"a capacity of {capacity_tokens:,} tokens is {blocks:,} blocks "
            f"of {block_size}, more than {MAX_POOL_BLOCKS:,} (a larger block size or a "
            "smaller capacity)"
        }
    if engine != "vllm" and capacity_tokens > MAX_SGLANG_SLOTS:
        return {
            "capacity_tokens": f"a capacity of {capacity_tokens:,} tokens is more than "
            f"SGLang's {MAX_SGLANG_SLOTS:,} KV slots"
        }
    return {}


class TraceClock:
    """The trace's arrivals on the engine's steps (see the module's docstring)."""

    def __init__(self, entries: Sequence[TraceEntry], step_ms: float, start_ms: int) -> None:
        """``start_ms``: the slice's first arrival, time 0 of the steps' times."""
        self.offsets_ms = [entry.timestamp - start_ms for entry in entries]
        self.step_ms = step_ms
        self.step_times_ms: list[float] = []
        self._now_ms = 0.0

    def arrived_by_next_step(self, arrived: int, idle: bool) -> int:
        """How many requests have arrived when the next step runs (``arrived`` already
        have); records that step's time."""
        offsets = self.offsets_ms
        if idle and arrived < len(offsets):
            self._now_ms = max(self._now_ms, float(offsets[arrived]))
        while arrived < len(offsets) and offsets[arrived] <= self._now_ms:
            arrived += 1
        self.step_times_ms.append(self._now_ms)
        self._now_ms += self.step_ms
        return arrived


class _TimedTrace:
    """What both engines' runners share: the requests that fit, those left out, the
    clock."""

    def __init__(
        self, entries: Sequence[TraceEntry], step_ms: float, fits: Callable[[TraceEntry], bool]
    ) -> None:
        self.entries = [entry for entry in entries if fits(entry)]
        self.skipped = [entry for entry in entries if not fits(entry)]
        self.clock = TraceClock(self.entries, step_ms, entries[0].timestamp)

    def workload(
        self, num_gpu_blocks: int, block_size: int, max_num_batched_tokens: int
    ) -> Workload:
        """The Workload the runner's base plays: the request count and the pool (the
        prompt knobs are unused: the trace makes its own requests)."""
        return Workload(
            requests=len(self.entries),
            shared_tokens=0,
            unique_tokens=0,
            output_tokens=1,
            num_gpu_blocks=num_gpu_blocks,
            block_size=block_size,
            max_num_batched_tokens=max_num_batched_tokens,
        )

    def due(self, arrived: int, idle: bool) -> range:
        """The requests to add before the next step (``arrived`` have been added; ``idle``:
        none is unfinished): those whose time has come."""
        return range(arrived, self.clock.arrived_by_next_step(arrived, idle))


def _output_tokens(entry: TraceEntry) -> int:
    return max(1, entry.output_length)


def _hashes_then(
    prompt_hashes: list[BlockHash], block_hasher: Callable[[Request], list[BlockHash]]
) -> Callable[[Request], list[BlockHash]]:
    """The prompt's hashes (computed once per distinct block by PromptHashes) given when
    the request is built; vLLM's hasher for the blocks its output fills."""

    def block_hasher_with_prompt(request: Request) -> list[BlockHash]:
        if not request.block_hashes and not request.num_output_tokens:
            return list(prompt_hashes)
        return block_hasher(request)

    return block_hasher_with_prompt


class TimedVLLMRunner(WorkloadRunner):
    """The slice on vLLM's ``Scheduler`` and ``EngineCore``: the workload lab's runner
    with the trace's requests and arrivals."""

    def __init__(self, entries: Sequence[TraceEntry], knobs: TimedKnobs) -> None:
        knobs.check(entries)
        self.knobs = knobs
        block_size = knobs.unit
        num_gpu_blocks = num_gpu_blocks_for(knobs.capacity_tokens, block_size)
        usable = num_gpu_blocks - 1

        def fits(entry: TraceEntry) -> bool:
            # The last sampled token is never computed, so it needs no slot.
            return cdiv(entry.input_length + _output_tokens(entry) - 1, block_size) <= usable

        self.trace = _TimedTrace(entries, knobs.step_ms, fits)
        self.prompt_hashes = HashedTrace.of(self.trace.entries, block_size).block_hashes
        batch = knobs.max_num_batched_tokens
        workload = self.trace.workload(num_gpu_blocks, block_size, batch)
        super().__init__(workload, prompt_hashes=None)

    def _validate(self, workload: Workload) -> None:
        """Checked by ``TimedKnobs.check``: the trace's limits, not a workload's knobs."""

    def _make_request(self, index: int) -> Request:
        entry = self.trace.entries[index]
        return Request(
            f"req-{index}",
            prompt_token_ids(entry),
            max_tokens=_output_tokens(entry),
            block_hasher=_hashes_then(self.prompt_hashes[index], self._block_hasher),
        )

    def _arrive(self) -> None:
        for index in self.trace.due(len(self.requests), not self._has_unfinished_requests()):
            self._add_request(self._make_request(index))


class TimedSGLangRunner(SGLangWorkloadRunner):
    """The slice on SGLang's Scheduler and RadixCache (fcfs, lru), ``capacity_tokens`` KV
    slots in pages of ``knobs.unit``: the workload lab's SGLang runner with the trace's
    requests and arrivals. SGLang does not chunk a prefill here (its modelled scheduler
    admits up to ``max_prefill_tokens`` a step), so ``max_num_batched_tokens`` is vLLM's
    only."""

    def __init__(self, entries: Sequence[TraceEntry], knobs: TimedKnobs) -> None:
        knobs.check(entries)
        self.knobs = knobs
        page_size = knobs.unit
        slots = knobs.capacity_tokens // page_size * page_size

        def fits(entry: TraceEntry) -> bool:
            # Admission wants the prompt, the (clipped) output and a page strictly below
            # the pool (PrefillAdder.add_one_req).
            return fits_an_empty_pool(entry.input_length, _output_tokens(entry), page_size, slots)

        self.trace = _TimedTrace(entries, knobs.step_ms, fits)
        num_gpu_blocks = num_gpu_blocks_for(knobs.capacity_tokens, page_size)
        workload = self.trace.workload(num_gpu_blocks, page_size, DEFAULT_MAX_NUM_BATCHED_TOKENS)
        super().__init__(workload, slots=slots, page_size=page_size)

    def _validate(self, workload: Workload) -> None:
        """Checked by ``TimedKnobs.check``: the trace's limits, not a workload's knobs."""

    def _make_request(self, index: int) -> Req:
        entry = self.trace.entries[index]
        return Req(f"req-{index}", prompt_token_ids(entry), max_new_tokens=_output_tokens(entry))

    def _arrive(self) -> None:
        for index in self.trace.due(len(self.requests), not self._has_unfinished_requests()):
            self._add_request(self._make_request(index))


TimedRunner = TimedVLLMRunner | TimedSGLangRunner


@dataclass
class TimedTraceRun(WorkloadRun):
    """A replay with time: a ``WorkloadRun`` (the workload lab's per-step series and
    summary, so its charts can show it) with each step's time and the slice's figures."""

    step_times_ms: list[float] = field(default_factory=list)
    step_ms: float = DEFAULT_STEP_MS
    capacity_tokens: int = 0
    skipped_requests: int = 0

    def summary(self) -> dict[str, Any]:
        summary = super().summary()
        for unused in ("shared_fraction", "resets_done", "resets_refused"):
            summary.pop(unused)  # workload knobs, not the trace's
        return {
            "engine": self.engine,
            **summary,
            "capacity_tokens": self.capacity_tokens,
            "block_size": self.workload.block_size,
            "step_ms": self.step_ms,
            "duration_ms": self.step_times_ms[-1] + self.step_ms if self.step_times_ms else 0.0,
            "skipped_requests": self.skipped_requests,
        }

    def csv_lines(self) -> list[str]:
        """The workload lab's CSV with each step's time in front."""
        lines = super().csv_lines()
        times = [f"{t:g}" for t in self.step_times_ms]
        return [
            f"time_ms,{lines[0]}",
            *(f"{t},{line}" for t, line in zip(times, lines[1:], strict=True)),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "summary": self.summary(),
            "cannot_show": CANNOT_SHOW,
            "series": {"time_ms": self.step_times_ms, **self.series},
        }


assert "time_ms" not in COLUMNS


def timed_runner(entries: Sequence[TraceEntry], knobs: TimedKnobs) -> TimedRunner:
    """The runner of a timed replay, for a caller that advances it itself (progress, Stop):
    ``advance(n)``, ``done``, then ``timed_result(runner)``. Raises WorkloadError for a
    knob that cannot be used."""
    if knobs.engine == "sglang":
        return TimedSGLangRunner(entries, knobs)
    return TimedVLLMRunner(entries, knobs)  # which checks the engine's name too


def timed_result(runner: TimedRunner) -> TimedTraceRun:
    """The runner's run so far (complete once ``done``), with its steps' times."""
    run = runner.result()
    return TimedTraceRun(
        **vars(run),
        step_times_ms=list(runner.trace.clock.step_times_ms),
        step_ms=runner.knobs.step_ms,
        capacity_tokens=runner.knobs.capacity_tokens,
        skipped_requests=len(runner.trace.skipped),
    )


def run_trace_timed(
    entries: Sequence[TraceEntry], knobs: TimedKnobs, stop: Stop | None = None
) -> TimedTraceRun:
    """Replay the slice with time on ``knobs.engine`` to its end, or until ``stop``
    (asked every few steps) says True (``completed`` is then False)."""
    runner = timed_runner(entries, knobs)
    while not runner.done:
        runner.advance(PROGRESS_EVERY_STEPS)
        if stop is not None and stop():
            break
    result = timed_result(runner)
    if runner.done and isinstance(runner, WorkloadRunner):
        runner.release()
    return result
