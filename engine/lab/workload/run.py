"""A workload run on either engine: its rows (``COLUMNS``, one per engine step), its
result (``WorkloadRun``), and the stepping loop both engines' runners share
(``SteppedRun``: workload/vllm/runner.py, workload/sglang/runner.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

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


class SteppedRun(Generic[RequestT]):
    """What a workload runner is on either engine: it plays ``workload`` a slice of steps
    at a time (``advance``), one ``series`` row per step, until ``done``, and gives its
    ``result``. A runner makes the requests arrive and runs one step
    (``_run_one_step``), says whether any is unfinished and what each hit."""

    engine_name = "vllm"  # the WorkloadRun's engine
    workload: Workload
    series: Series
    requests: list[RequestT]  # arrived, in arrival order
    _prepared: list[RequestT]  # built ahead of arrival (see prepare)

    @property
    def step(self) -> int:
        return len(self.series["step"])

    def _has_unfinished_requests(self) -> bool:
        raise NotImplementedError

    def _run_one_step(self) -> None:
        raise NotImplementedError

    def _request_hits(self) -> list[int]:
        """Prefix-cache hit tokens at each arrived request's first admission (0 if none)."""
        raise NotImplementedError

    def _make_request(self, index: int) -> RequestT:
        """Request ``index`` of the workload, as the engine takes it."""
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
