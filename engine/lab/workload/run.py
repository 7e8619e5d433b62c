"""A workload run on either engine: its rows (``COLUMNS``, one per engine step), its
result (``WorkloadRun``), and the stepping loop both engines' runners share
(``SteppedRun``: workload/vllm/runner.py, workload/sglang/runner.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from engine.lab.workload.workload import MAX_STEPS, Workload

# column -> what one row's value means; a row is one engine step, after it ran.
COLUMNS: dict[str, str] = {
    "step": "engine step (1 is the first schedule() call)",
    "arrived": "requests added so far",
    "running": "requests running after the step",
    "waiting": "requests waiting after the step (preempted ones included)",
    "finished": "requests finished so far",
    "queries": "prefix_cache_queries this step: prompt tokens of newly admitted requests",
    "hits": "prefix_cache_hits this step: of those, tokens found in the cache",
    "hit_rate": "hits / queries this step (empty when nothing was admitted)",
    "cumulative_queries": "prefix_cache_queries so far",
    "cumulative_hits": "prefix_cache_hits so far",
    "cumulative_hit_rate": "cumulative_hits / cumulative_queries",
    "preempted_queries": "tokens of re-admitted preempted requests this step",
    "preempted_hits": "of those, tokens still in the cache",
    "preemptions": "requests preempted this step",
    "cumulative_preemptions": "requests preempted so far",
    "survival_fraction": "preempted_hits / preempted_queries so far (empty before any)",
    "held_blocks": "blocks held by requests (ref_cnt > 0)",
    "free_cached_blocks": "free blocks that still hold a cached hash (can be hit)",
    "free_empty_blocks": "free blocks without a hash",
    "evictions": "cached blocks dropped to reuse them this step (a BlockRemoved event each)",
    "prefill_tokens": "tokens admissions had to compute this step (queries minus hits)",
    "prefill_tokens_without_cache": "tokens they would compute with no prefix cache",
    "cumulative_prefill_tokens": "prefill_tokens so far",
    "cumulative_prefill_tokens_without_cache": "prefill_tokens_without_cache so far",
    "reset": "1: reset_prefix_cache succeeded before this step, 0: refused, empty: none",
}


Series = dict[str, list[Any]]


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


@dataclass
class WorkloadRun:
    """A finished (or stopped) run: the knobs, one row per step, and per-request hits."""

    workload: Workload
    series: Series
    request_hits: list[int]  # prefix-cache hit tokens at each request's first admission
    completed: bool  # False: stopped before every request finished
    engine: str = "vllm"  # "sglang": played by engine/lab/workload/sglang/runner.py

    @property
    def num_steps(self) -> int:
        return len(self.series["step"])

    def last(self, column: str) -> Any:
        values = self.series[column]
        return values[-1] if values else None

    def summary(self) -> dict[str, Any]:
        """The run's headline numbers: what the presets' expected outcomes quote."""
        later = self.request_hits[1:]
        resets = [value for value in self.series["reset"] if value is not None]
        return {
            "requests": self.workload.requests,
            "steps": self.num_steps,
            "completed": self.completed,
            "shared_fraction": self.workload.shared_fraction,
            "queries": self.last("cumulative_queries") or 0,
            "hits": self.last("cumulative_hits") or 0,
            "hit_rate": self.last("cumulative_hit_rate") or 0.0,
            "first_request_hits": self.request_hits[0] if self.request_hits else 0,
            "later_requests_min_hits": min(later) if later else 0,
            "later_requests_max_hits": max(later) if later else 0,
            # the first request and any admitted before what they share was cached
            "requests_without_hits": sum(1 for hits in self.request_hits if not hits),
            # SGLang retracts rather than preempts, and its retractions are not counted: no
            # figure, not zero
            "preemptions": (
                None if self.engine == "sglang" else self.last("cumulative_preemptions") or 0
            ),
            "survival_fraction": self.last("survival_fraction"),
            "evictions": sum(self.series["evictions"]),
            "prefill_tokens": self.last("cumulative_prefill_tokens") or 0,
            "prefill_tokens_without_cache": (
                self.last("cumulative_prefill_tokens_without_cache") or 0
            ),
            "resets_done": sum(resets),
            "resets_refused": len(resets) - sum(resets),
        }

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "workload": self.workload.knobs(),
            "summary": self.summary(),
            "series": self.series,
        }
        if self.engine != "vllm":  # vLLM's output as it always was
            data["engine"] = self.engine
        return data

    def csv_lines(self) -> list[str]:
        """The series as CSV: a header, then one line per step; empty cells for no value."""
        lines = [",".join(COLUMNS)]
        for row in zip(*(self.series[column] for column in COLUMNS), strict=True):
            lines.append(",".join(_csv_cell(value) for value in row))
        return lines


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


RequestT = TypeVar("RequestT")


@dataclass(frozen=True)
class StepCounts:
    """What one engine step did, as one engine's runner counts it; the preemption counts
    are None on an engine that does not preempt (SGLang's retractions are not counted)."""

    running: int
    waiting: int
    finished: int  # so far
    queries: int  # prompt tokens of newly admitted requests
    hits: int  # of those, found in the cache
    preempted_queries: int | None  # tokens of re-admitted preempted requests
    preempted_hits: int | None
    preemptions: int | None
    held: int  # pool usage after the step: held, free with a cached hash, free and empty
    free_cached: int
    free_empty: int
    evictions: int


class Runner(Protocol):
    """What a caller plays a workload with, on either engine (workload/vllm/runner.py,
    workload/sglang/runner.py; a trace's timed replay, traces/timed.py): a slice of
    steps at a time (``advance``), one ``series`` row per step, until ``done``; then its
    ``result``, and ``release`` lets its pool go."""

    engine_name: str
    workload: Workload
    series: Series

    @property
    def step(self) -> int: ...

    @property
    def done(self) -> bool: ...

    @property
    def num_finished(self) -> int: ...

    @property
    def num_prepared(self) -> int: ...

    def prepare(self, count: int) -> bool: ...

    def advance(self, max_steps: int = ...) -> None: ...

    def result(self) -> WorkloadRun: ...

    def release(self) -> None: ...


class SteppedRun(Generic[RequestT]):
    """The stepping loop both engines' runners share (a ``Runner``): requests arrive,
    the reset is asked for at its step, the engine steps, and its ``StepCounts`` become
    the step's row with the run's totals. An engine's runner makes its requests, adds
    one, resets, steps (``_engine_step``), and says whether any is unfinished and what
    each hit."""

    engine_name = "vllm"  # the WorkloadRun's engine
    workload: Workload
    series: Series
    requests: list[RequestT]  # arrived, in arrival order
    _prepared: list[RequestT]  # built ahead of arrival (see prepare)
    _totals: dict[str, int]

    def _start(self, workload: Workload) -> None:
        """An empty run of ``workload``: no row, no request, no total."""
        self.workload = workload
        self.series = {column: [] for column in COLUMNS}
        self.requests = []
        self._prepared = []
        self._totals = dict.fromkeys(
            ("queries", "hits", "preempted_queries", "preempted_hits", "preemptions"), 0
        )

    @property
    def step(self) -> int:
        return len(self.series["step"])

    def _has_unfinished_requests(self) -> bool:
        raise NotImplementedError

    def _request_hits(self) -> list[int]:
        """Prefix-cache hit tokens at each arrived request's first admission (0 if none)."""
        raise NotImplementedError

    def _make_request(self, index: int) -> RequestT:
        """Request ``index`` of the workload, as the engine takes it."""
        workload = self.workload
        return self._new_request(
            f"req-{index}",
            workload.prompt(index),
            workload.output_tokens,
            workload.cache_salt(index),
        )

    def _new_request(
        self, request_id: str, prompt: list[int], output_tokens: int, salt: str | None
    ) -> RequestT:
        """The engine's request (``salt``: the workload's cache salt, or None)."""
        raise NotImplementedError

    def _add_request(self, request: RequestT) -> None:
        """Add it to the engine, and to ``requests``."""
        raise NotImplementedError

    def _reset(self) -> int:
        """The engine's prefix-cache reset: 1 done, 0 refused."""
        raise NotImplementedError

    def _engine_step(self, reset_asked: bool) -> StepCounts:
        """One engine step (``reset_asked``: a reset was asked for before it)."""
        raise NotImplementedError

    @property
    def num_prepared(self) -> int:
        """Requests built so far, ahead of their arrival or on it."""
        return max(len(self._prepared), len(self.requests))

    def prepare(self, count: int) -> bool:
        """Build up to ``count`` more requests ahead of their arrival, so a caller can
        spread the work (vLLM: hashing many prompts) over several slices. True when all
        are built."""
        start = len(self._prepared)
        for index in range(start, min(self.workload.requests, start + count)):
            self._prepared.append(self._make_request(index))
        return len(self._prepared) == self.workload.requests

    def _arriving(self) -> list[RequestT]:
        """The requests that arrive before this step (built now if not prepared)."""
        workload, arrived = self.workload, len(self.requests)
        count = workload.arrival or workload.requests
        return [
            self._prepared[index] if index < len(self._prepared) else self._make_request(index)
            for index in range(arrived, min(workload.requests, arrived + count))
        ]

    def _arrive(self) -> None:
        for request in self._arriving():
            self._add_request(request)

    def _run_one_step(self) -> None:
        step = self.step + 1
        self._arrive()
        reset = self._reset() if step == self.workload.reset_step else None
        counts = self._engine_step(reset is not None)
        totals = self._totals
        preempted_queries = counts.preempted_queries or 0
        preempted_hits = counts.preempted_hits or 0
        totals["queries"] += counts.queries
        totals["hits"] += counts.hits
        totals["preempted_queries"] += preempted_queries
        totals["preempted_hits"] += preempted_hits
        totals["preemptions"] += counts.preemptions or 0
        admitted_queries = counts.queries + preempted_queries
        admitted_hits = counts.hits + preempted_hits
        all_queries = totals["queries"] + totals["preempted_queries"]
        all_hits = totals["hits"] + totals["preempted_hits"]
        preempts = counts.preemptions is not None
        row = {
            "step": step,
            "arrived": len(self.requests),
            "running": counts.running,
            "waiting": counts.waiting,
            "finished": counts.finished,
            "queries": counts.queries,
            "hits": counts.hits,
            "hit_rate": _ratio(counts.hits, counts.queries),
            "cumulative_queries": totals["queries"],
            "cumulative_hits": totals["hits"],
            "cumulative_hit_rate": _ratio(totals["hits"], totals["queries"]),
            "preempted_queries": counts.preempted_queries,
            "preempted_hits": counts.preempted_hits,
            "preemptions": counts.preemptions,
            "cumulative_preemptions": totals["preemptions"] if preempts else None,
            "survival_fraction": (
                _ratio(totals["preempted_hits"], totals["preempted_queries"]) if preempts else None
            ),
            "held_blocks": counts.held,
            "free_cached_blocks": counts.free_cached,
            "free_empty_blocks": counts.free_empty,
            "evictions": counts.evictions,
            "prefill_tokens": admitted_queries - admitted_hits,
            "prefill_tokens_without_cache": admitted_queries,
            "cumulative_prefill_tokens": all_queries - all_hits,
            "cumulative_prefill_tokens_without_cache": all_queries,
            "reset": reset,
        }
        for column, value in row.items():
            self.series[column].append(value)

    @property
    def done(self) -> bool:
        return (
            len(self.requests) == self.workload.requests and not self._has_unfinished_requests()
        ) or self.step >= MAX_STEPS

    def advance(self, max_steps: int = MAX_STEPS) -> None:
        """Run up to ``max_steps`` more engine steps (fewer if the run ends)."""
        for _ in range(max_steps):
            if self.done:
                return
            self._run_one_step()

    def result(self) -> WorkloadRun:
        return WorkloadRun(
            workload=self.workload,
            series={column: list(values) for column, values in self.series.items()},
            request_hits=self._request_hits(),
            completed=self.done and self.step < MAX_STEPS,
            engine=self.engine_name,
        )


PROGRESS_EVERY_STEPS = 20
