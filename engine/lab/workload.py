"""Workloads: many requests played untraced through the engine, measured step by step.

A ``Workload`` is a handful of knobs (how many requests, how they arrive, a shared
system prompt plus a unique part, the output length, the pool, the cache policy,
an optional reset). ``WorkloadRunner`` plays it on the same ``Scheduler`` and
``EngineCore`` the timelines use, without tracing or snapshots, and records one
row per engine step: the prefix-cache counters, pool usage, evictions,
preemptions and prefill work. Presets live in ``content/workloads/*.toml``.

Standard library only, like the rest of the engine.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Generic, Literal, TypeVar, get_args

from engine.lab.prompt_hashes import PROMPT_HASHES, PromptHashStore
from engine.lab.scenario import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    DEFAULT_MAX_NUM_SEQS,
    MODES,
    Action,
    Mode,
    RequestSpec,
    Scenario,
    reset_flags,
)
from engine.lab.variants import engine_core, reset_prefix_cache, scheduler_class
from engine.vllm.kv_cache_manager import cdiv
from engine.vllm.kv_cache_utils import KVCacheBlock
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler

SaltPolicy = Literal["none", "fixed", "per-user", "per-request"]
SALT_POLICIES: tuple[SaltPolicy, ...] = get_args(SaltPolicy)

MAX_REQUESTS = 2_000
MAX_POOL_BLOCKS = 20_000
MAX_BLOCK_SIZE = 1_024
MAX_PROMPT_TOKENS = 32_768
MAX_OUTPUT_TOKENS = 4_096
MAX_BATCHED_TOKENS = 65_536
# Every token of every request is hashed and scheduled: this bounds a run's work.
MAX_TOTAL_TOKENS = 5_000_000
# A run that has not finished by then is stopped (it cannot happen with checked knobs).
MAX_STEPS = 1_000_000

# Token ids: the shared prompt is 1..S; each request's unique part and its prepended
# token come from ranges of their own, so no two requests share them by accident.
UNIQUE_TOKEN_BASE = 1_000_000
PREPEND_TOKEN_BASE = 900_000_000
FIXED_SALT = "lab-fixed-salt"


class WorkloadError(ValueError):
    """A knob that cannot be used; ``knob`` names it, the message says why."""

    def __init__(self, knob: str, message: str) -> None:
        super().__init__(message)
        self.knob = knob


@dataclass(frozen=True)
class Workload:
    """The knobs of a run. Field names are the knob names (CLI and presets)."""

    requests: int = 200
    arrival: int = 0  # requests added before each engine step; 0: all before the first
    shared_tokens: int = 2_000  # the system prompt every request starts with
    unique_tokens: int = 200  # each request's own part, after the shared one
    output_tokens: int = 16  # max_tokens: tokens each request generates
    num_gpu_blocks: int = 20_000
    block_size: int = 16
    max_num_batched_tokens: int = DEFAULT_MAX_NUM_BATCHED_TOKENS
    salt: SaltPolicy = "none"
    users: int = 10  # for salt = "per-user": request i belongs to user i % users
    prepend_token: bool = False  # one per-request token in front of the prompt
    reset_step: int = 0  # reset_prefix_cache before this engine step; 0: never
    reset_mode: Mode = "default"

    @property
    def prompt_tokens(self) -> int:
        return int(self.prepend_token) + self.shared_tokens + self.unique_tokens

    @property
    def total_tokens(self) -> int:
        """Every token of every request: each is hashed and scheduled, so this is a
        run's work."""
        return self.requests * (self.prompt_tokens + self.output_tokens)

    @property
    def shared_fraction(self) -> float:
        """The share of each prompt that other requests could have cached."""
        return self.shared_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def replace(self, **knobs: Any) -> Workload:
        """These knobs changed, checked: a wrong name or type raises WorkloadError."""
        return workload_from_knobs(knobs, base=self)

    def knobs(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def prompt_key(self) -> tuple[Any, ...]:
        """The knobs ``prompt``, ``cache_salt`` and the block hashes read: two workloads
        with the same key give request i the same prompt block hashes."""
        users = self.users if self.salt == "per-user" else None
        knobs = (self.prepend_token, self.shared_tokens, self.unique_tokens, self.block_size)
        return (*knobs, self.salt, users)

    def cache_salt(self, index: int) -> str | None:
        if self.salt == "fixed":
            return FIXED_SALT
        if self.salt == "per-user":
            return f"user-{index % self.users}"
        if self.salt == "per-request":
            return f"request-{index}"
        return None

    def prompt(self, index: int) -> list[int]:
        tokens = [PREPEND_TOKEN_BASE + index] if self.prepend_token else []
        tokens.extend(_system_prompt(self.shared_tokens))
        first = UNIQUE_TOKEN_BASE + index * self.unique_tokens
        tokens.extend(range(first, first + self.unique_tokens))
        return tokens


@lru_cache(maxsize=4)
def _system_prompt(num_tokens: int) -> tuple[int, ...]:
    """The shared prompt's token ids, made once: every request's prompt then holds the
    same int objects (no new ones per request), and comparing two prompts' shared
    parts (engine/lab/prompt_hashes.py) finds them identical without comparing values."""
    return tuple(range(1, num_tokens + 1))


KNOB_TYPES: dict[str, type] = {
    "requests": int,
    "arrival": int,
    "shared_tokens": int,
    "unique_tokens": int,
    "output_tokens": int,
    "num_gpu_blocks": int,
    "block_size": int,
    "max_num_batched_tokens": int,
    "salt": str,
    "users": int,
    "prepend_token": bool,
    "reset_step": int,
    "reset_mode": str,
}
assert set(KNOB_TYPES) == {f.name for f in dataclasses.fields(Workload)}

# knob -> (lowest, highest) for the whole-number knobs
KNOB_RANGES: dict[str, tuple[int, int]] = {
    "requests": (1, MAX_REQUESTS),
    "arrival": (0, MAX_REQUESTS),
    "shared_tokens": (0, MAX_PROMPT_TOKENS),
    "unique_tokens": (0, MAX_PROMPT_TOKENS),
    "output_tokens": (1, MAX_OUTPUT_TOKENS),
    "num_gpu_blocks": (2, MAX_POOL_BLOCKS),
    "block_size": (1, MAX_BLOCK_SIZE),
    "max_num_batched_tokens": (1, MAX_BATCHED_TOKENS),
    "users": (1, MAX_REQUESTS),
    "reset_step": (0, MAX_STEPS),
}


def workload_from_knobs(knobs: Mapping[str, Any], base: Workload | None = None) -> Workload:
    """A workload from knob values (a preset's table, the CLI, the app), checked."""
    workload = typed_workload(knobs, base)
    validate(workload)
    return workload


def typed_workload(knobs: Mapping[str, Any], base: Workload | None = None) -> Workload:
    """A workload from knob values whose names and types are checked, ranges not yet
    (``problems`` then lists every knob out of range at once)."""
    for name, value in knobs.items():
        kind = KNOB_TYPES.get(name)
        if kind is None:
            raise WorkloadError(name, f"unknown knob {name!r} (one of {', '.join(KNOB_TYPES)})")
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            wanted = {int: "a whole number", bool: "true or false", str: "text"}[kind]
            raise WorkloadError(name, f"{name} must be {wanted}, not {value!r}")
    return dataclasses.replace(base or Workload(), **knobs)


def problems(workload: Workload) -> dict[str, str]:
    """Every knob that cannot be used, with the reason (empty: the workload can run)."""
    found: dict[str, str] = {}
    for name, (low, high) in KNOB_RANGES.items():
        value = getattr(workload, name)
        if not low <= value <= high:
            found[name] = f"{name} must be between {low:,} and {high:,}, not {value:,}"
    if workload.salt not in SALT_POLICIES:
        found["salt"] = f"salt must be one of {', '.join(SALT_POLICIES)}, not {workload.salt!r}"
    if workload.reset_mode not in MODES:
        found["reset_mode"] = (
            f"reset_mode must be one of {', '.join(MODES)}, not {workload.reset_mode!r}"
        )
    if found:
        return found
    if workload.prompt_tokens < 1:
        found["shared_tokens"] = "the prompt is empty: give shared_tokens or unique_tokens"
    elif workload.prompt_tokens > MAX_PROMPT_TOKENS:
        found["unique_tokens"] = (
            f"the prompt has {workload.prompt_tokens:,} tokens, more than {MAX_PROMPT_TOKENS:,}"
        )
    total = workload.total_tokens
    if total > MAX_TOTAL_TOKENS:
        found["requests"] = (
            f"{workload.requests:,} requests of {workload.prompt_tokens + workload.output_tokens:,}"
            f" tokens is {total:,} tokens, more than {MAX_TOTAL_TOKENS:,}"
        )
    # The last sampled token is never computed, so it needs no slot (as for scenarios).
    num_tokens = workload.prompt_tokens + workload.output_tokens - 1
    needed = cdiv(num_tokens, workload.block_size)
    usable = workload.num_gpu_blocks - 1
    if num_tokens >= 1 and needed > usable:
        found["num_gpu_blocks"] = (
            f"a request needs {needed:,} blocks ({num_tokens:,} tokens at block_size "
            f"{workload.block_size}) but the pool has only {usable:,} usable blocks"
        )
    return found


def validate(workload: Workload) -> None:
    """Raise WorkloadError for the first knob that cannot be used."""
    for knob, message in problems(workload).items():
        raise WorkloadError(knob, message)


# -- the series ----------------------------------------------------------------

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
    engine: str = "vllm"  # "sglang": played by engine/lab/workload_sglang.py

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


class WorkloadRunner(SteppedRun[Request]):
    """Plays a workload step by step, so a caller can show progress or stop it.

    ``advance(n)`` runs up to n engine steps; ``done`` says when every request has
    finished. The engine is driven through its public calls only (add_request,
    reset_prefix_cache, step), with vLLM's default scheduler settings.
    """

    def __init__(
        self,
        workload: Workload,
        enable_kv_cache_events: bool = False,
        prompt_hashes: PromptHashStore | None = PROMPT_HASHES,
    ) -> None:
        """``prompt_hashes``: where prompt block hashes of earlier runs are kept and
        reused (None hashes every prompt afresh; the run is the same)."""
        self._validate(workload)
        self.workload = workload
        self._reset_flags = reset_flags(Action("reset_prefix_cache", "reset"), workload.reset_mode)
        # vLLM 0.33.0's engine, or keep mode's proposed one for a keep reset.
        self.scheduler = scheduler_class(self._reset_flags["keep_running_requests"])(
            workload.num_gpu_blocks,
            workload.block_size,
            max_num_batched_tokens=workload.max_num_batched_tokens,
            max_num_seqs=DEFAULT_MAX_NUM_SEQS,
            # Off by default, as in vLLM; PoolCounter counts what the lab draws.
            enable_kv_cache_events=enable_kv_cache_events,
        )
        self.engine = engine_core(self.scheduler)
        self._block_hasher = self.scheduler.request_block_hasher
        if prompt_hashes is not None:
            self._block_hasher = prompt_hashes.hasher(
                workload.prompt_key(), workload.block_size, self._block_hasher
            )
        self.pool_counter = PoolCounter(self.scheduler)
        self.series = {column: [] for column in COLUMNS}
        self.requests = []
        self._prepared: list[Request] = []  # built ahead of arrival (see prepare)
        self.num_finished = 0
        self._released = False
        self._totals = dict.fromkeys(
            ("queries", "hits", "preempted_queries", "preempted_hits", "preemptions"), 0
        )

    def _validate(self, workload: Workload) -> None:
        """Raise WorkloadError for a knob that cannot be used (a runner that makes its own
        requests, engine/lab/trace_replay.py, checks its own limits)."""
        validate(workload)

    def _has_unfinished_requests(self) -> bool:
        return self.scheduler.has_unfinished_requests()

    def _make_request(self, index: int) -> Request:
        """Request ``index`` of the workload; building it hashes its prompt's full blocks."""
        workload = self.workload
        return Request(
            f"req-{index}",
            workload.prompt(index),
            max_tokens=workload.output_tokens,
            block_hasher=self._block_hasher,
            cache_salt=workload.cache_salt(index),
        )

    def _arrive(self) -> None:
        for request in self._arriving():
            self._add_request(request)

    def _add_request(self, request: Request) -> None:
        self.engine.add_request(request)
        self.requests.append(request)

    def _run_one_step(self) -> None:
        assert not self._released, "a released run cannot advance"
        step = self.step + 1
        self._arrive()
        reset = None
        if step == self.workload.reset_step:
            reset = int(reset_prefix_cache(self.engine, **self._reset_flags))
        result = self.engine.step()
        self.num_finished += len(result.finished_req_ids)
        stats = self.scheduler.make_stats()
        assert stats is not None  # log_stats is on by default
        totals = self._totals
        totals["queries"] += stats.queries
        totals["hits"] += stats.hits
        totals["preempted_queries"] += stats.preempted_queries
        totals["preempted_hits"] += stats.preempted_hits
        totals["preemptions"] += len(result.scheduler_output.preempted_req_ids)
        admitted_queries = stats.queries + stats.preempted_queries
        admitted_hits = stats.hits + stats.preempted_hits
        all_queries = totals["queries"] + totals["preempted_queries"]
        all_hits = totals["hits"] + totals["preempted_hits"]
        evictions, held, free_cached, free_empty = self.pool_counter.take_step(reset is not None)
        row = {
            "step": step,
            "arrived": len(self.requests),
            "running": len(self.scheduler.running),
            "waiting": len(self.scheduler.waiting),
            "finished": self.num_finished,
            "queries": stats.queries,
            "hits": stats.hits,
            "hit_rate": _ratio(stats.hits, stats.queries),
            "cumulative_queries": totals["queries"],
            "cumulative_hits": totals["hits"],
            "cumulative_hit_rate": _ratio(totals["hits"], totals["queries"]),
            "preempted_queries": stats.preempted_queries,
            "preempted_hits": stats.preempted_hits,
            "preemptions": len(result.scheduler_output.preempted_req_ids),
            "cumulative_preemptions": totals["preemptions"],
            "survival_fraction": _ratio(totals["preempted_hits"], totals["preempted_queries"]),
            "held_blocks": held,
            "free_cached_blocks": free_cached,
            "free_empty_blocks": free_empty,
            "evictions": evictions,
            "prefill_tokens": admitted_queries - admitted_hits,
            "prefill_tokens_without_cache": admitted_queries,
            "cumulative_prefill_tokens": all_queries - all_hits,
            "cumulative_prefill_tokens_without_cache": all_queries,
            "reset": reset,
        }
        for column, value in row.items():
            self.series[column].append(value)

    def release(self) -> None:
        """Let the run's pool go now, by reference counting, once its result is taken.

        A pool is one big reference cycle (the free queue links each block to its
        neighbours both ways, and the counting wrappers refer to the pool), so a
        dropped runner waited for a full collection of the cyclic garbage collector,
        which walks every block of every dropped pool (50-70 ms in Pyodide, at random
        inside a later run). Unlinked, it goes as soon as it is dropped. The runner
        cannot advance after this."""
        assert self.done, "only a finished run's pool can go"
        if self._released:
            return
        self._released = True
        self.pool_counter.detach()
        pool = self.scheduler.kv_cache_manager.block_pool
        queue = pool.free_block_queue
        for block in (queue.fake_free_list_head, *pool.blocks, queue.fake_free_list_tail):
            block.prev_free_block = block.next_free_block = None

    def _request_hits(self) -> list[int]:
        return [max(0, r.num_cached_tokens) for r in self.requests]


def pool_usage(scheduler: Scheduler) -> tuple[int, int, int]:
    """Held, free-with-a-hash and free-without-a-hash blocks (the null block is none),
    counted by looking at every block."""
    pool = scheduler.kv_cache_manager.block_pool
    num_free = pool.get_num_free_blocks()
    # The plain field is about 3x faster to read than the block_hash property.
    free_hashes = [block._block_hash for block in pool.blocks if not block.ref_cnt]
    free_cached = len(free_hashes) - free_hashes.count(None)
    return pool.num_gpu_blocks - 1 - num_free, free_cached, num_free - free_cached


class PoolCounter:
    """Evictions and the ``pool_usage`` counts of each step, kept as the pool changes.

    The run leaves KV events off, as vLLM does by default: building a ``BlockStored``
    event for every block cached was a fifth of a large run. An eviction is counted
    where the pool would emit its ``BlockRemoved``: a cached block dropped for reuse.
    Scanning a 20,000-block pool after every step took a third of a large run, while a
    step changes few blocks. Only the free blocks that still hold a hash need counting
    (held blocks and free blocks in all follow from the free queue's length). A free
    block with a hash leaves that count when a request hits it (``touch``) or when it
    is evicted, and joins it when its last reference is freed. After a reset the pool
    is scanned once.
    """

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.pool = pool = scheduler.kv_cache_manager.block_pool
        self.free_cached = pool_usage(scheduler)[1]
        self.evictions = 0
        touch, free_blocks = pool.touch, pool.free_blocks
        maybe_evict_cached_block = pool._maybe_evict_cached_block

        # Wrapping the pool object's own calls leaves the traced model untouched.
        def counting_touch(blocks: Iterable[KVCacheBlock]) -> None:
            blocks = list(blocks)
            self.free_cached -= sum(
                1 for block in _distinct(blocks) if not block.ref_cnt and block._block_hash
            )
            touch(blocks)

        def counting_free_blocks(ordered_blocks: Iterable[KVCacheBlock]) -> None:
            blocks = list(ordered_blocks)
            free_blocks(blocks)
            self.free_cached += sum(
                1
                for block in _distinct(blocks)
                if not block.ref_cnt and block._block_hash and not block.is_null
            )

        def counting_maybe_evict_cached_block(block: KVCacheBlock) -> bool:
            evicted = maybe_evict_cached_block(block)
            self.evictions += evicted
            return evicted

        self._wrapped = ("touch", "free_blocks", "_maybe_evict_cached_block")
        pool.touch = counting_touch  # type: ignore[method-assign]
        pool.free_blocks = counting_free_blocks  # type: ignore[method-assign]
        pool._maybe_evict_cached_block = counting_maybe_evict_cached_block  # type: ignore[method-assign]

    def detach(self) -> None:
        """The pool's own methods again (the wrappers refer to the pool: a cycle)."""
        for name in self._wrapped:
            vars(self.pool).pop(name, None)

    def take_step(self, reset: bool) -> tuple[int, int, int, int]:
        """The step's evictions, then held, free-cached and free-empty blocks after it."""
        evictions, self.evictions = self.evictions, 0
        if reset:
            self.free_cached = pool_usage(self.scheduler)[1]
        else:
            self.free_cached -= evictions
        num_free = self.pool.get_num_free_blocks()
        held = self.pool.num_gpu_blocks - 1 - num_free
        return evictions, held, self.free_cached, num_free - self.free_cached


def _distinct(blocks: list[KVCacheBlock]) -> Iterable[KVCacheBlock]:
    """Each block once: a list freed or touched together may name a block twice.
    (Blocks compare and hash by identity: KVCacheBlock has eq=False.)"""
    return dict.fromkeys(blocks)


def run_workload(
    workload: Workload, on_progress: Callable[[WorkloadRunner], bool] | None = None
) -> WorkloadRun:
    """Play the workload to its end. ``on_progress`` is called every few steps;
    returning False stops the run (the result then has ``completed`` False)."""
    runner = WorkloadRunner(workload)
    while not runner.done:
        runner.advance(PROGRESS_EVERY_STEPS)
        if on_progress is not None and not on_progress(runner):
            break
    run = runner.result()
    if runner.done:
        runner.release()
    return run


PROGRESS_EVERY_STEPS = 20


# -- the same run as a scenario, for the step view ----------------------------------

# A run this small can be played as a scenario, a complete snapshot per action: every
# snapshot holds every request's block chain, so the work grows with actions x blocks.
MAX_SCENARIO_BLOCKS = 400
MAX_SCENARIO_WORK = 40_000  # (requests + steps) x requests x blocks per request


def fits_a_scenario(workload: Workload, num_steps: int) -> bool:
    """Whether ``num_steps`` engine steps of the workload are small enough to be played
    as a scenario (about a second here) and drawn block by block."""
    blocks_per_request = cdiv(workload.prompt_tokens + workload.output_tokens, workload.block_size)
    work = (workload.requests + num_steps) * workload.requests * blocks_per_request
    return workload.num_gpu_blocks <= MAX_SCENARIO_BLOCKS and work <= MAX_SCENARIO_WORK


def workload_scenario(workload: Workload, num_steps: int) -> tuple[Scenario, list[int]]:
    """The workload's first ``num_steps`` engine steps as a scenario: its arrivals,
    its reset and its steps, as actions. Also returns, for each engine step, the
    index of the timeline step that shows the state after it (timeline step 0 is
    the empty engine)."""
    actions: list[Action] = []
    after_step: list[int] = []
    count = workload.arrival or workload.requests
    arrived = 0
    for step in range(1, num_steps + 1):
        for index in range(arrived, min(workload.requests, arrived + count)):
            spec = RequestSpec(
                request_id=f"req-{index}",
                prompt_token_ids=tuple(workload.prompt(index)),
                max_tokens=workload.output_tokens,
                cache_salt=workload.cache_salt(index),
            )
            actions.append(Action("add_request", "add", request=spec))
            arrived += 1
        if step == workload.reset_step:
            flags = reset_flags(Action("reset_prefix_cache", "reset"), workload.reset_mode)
            actions.append(
                Action(
                    "reset_prefix_cache",
                    "reset",
                    reset_running_requests=flags["reset_running_requests"],
                    keep_running_requests=flags["keep_running_requests"],
                )
            )
        actions.append(Action("step", "step"))
        after_step.append(len(actions))
    scenario = Scenario(
        name="workload",
        title="Workload lab run",
        summary="",
        order=0,
        modes=("default",),
        num_gpu_blocks=workload.num_gpu_blocks,
        block_size=workload.block_size,
        max_num_batched_tokens=workload.max_num_batched_tokens,
        setup=(),
        script=tuple(actions),
        narration={"": {}},
    )
    return scenario, after_step


# -- presets ---------------------------------------------------------------------


# A preset's words on SGLang when its file has none of its own: the run's figures.
SGLANG_FIGURES = "{hits} hits out of {queries} queried tokens, a hit rate of {hit_rate}."
SGLANG_COMPARE_FIGURES = "Overlaid: {compare_hit_rate}."


@dataclass(frozen=True)
class Preset:
    """A named workload with what to expect, from ``content/workloads/NAME.toml``.

    ``compare`` holds the knobs of the run overlaid on the same charts (the rest
    as in ``workload``). ``expected`` (and ``compare_expected``, said only when the
    overlay ran) are texts whose ``{placeholders}`` are the runs' knobs and summary
    numbers, so every number they show is the engine's.
    """

    name: str
    title: str
    order: int
    workload: Workload
    compare: Mapping[str, Any]
    compare_label: str
    label: str
    expected: str
    compare_expected: str
    # The same on SGLang's model (the preset's ``[sglang]`` table): its own words, as
    # its tree is not vLLM's hash chain; without them, the figures only.
    sglang_expected: str = SGLANG_FIGURES
    sglang_compare_expected: str = SGLANG_COMPARE_FIGURES

    def compare_workload(self, workload: Workload | None = None) -> Workload | None:
        """The overlaid run's workload: ``workload`` (the learner's knobs) with the
        preset's comparison knobs applied; None when the preset compares nothing."""
        if not self.compare:
            return None
        return (workload or self.workload).replace(**self.compare)

    def expected_text(self, run: WorkloadRun, compare: WorkloadRun | None = None) -> str:
        """What to expect of ``run`` (and the overlaid ``compare``), in the words for the
        engine that played it."""
        if run.engine == "sglang":
            expected, compared = self.sglang_expected, self.sglang_compare_expected
        else:
            expected, compared = self.expected, self.compare_expected
        if compare is None:
            return format_expected(expected, run, None)
        return format_expected(f"{expected} {compared}", run, compare)


def format_expected(template: str, run: WorkloadRun, compare: WorkloadRun | None) -> str:
    """Fill ``{name}`` with the run's knobs and summary, ``{compare_name}`` with the overlay's."""
    values = _formatted({**run.workload.knobs(), **run.summary()})
    if compare is not None:
        overlay = _formatted({**compare.workload.knobs(), **compare.summary()})
        values.update({f"compare_{k}": v for k, v in overlay.items()})
    try:
        return " ".join(template.split()).format_map(values)
    except (KeyError, ValueError, IndexError) as error:
        raise WorkloadError("expected", f"expected text has a bad placeholder: {error}") from None


def _formatted(summary: Mapping[str, Any]) -> dict[str, str]:
    """Summary values as the texts quote them: rates as percentages, counts with commas."""
    shown: dict[str, str] = {}
    for key, value in summary.items():
        if value is None:
            shown[key] = "n/a"
        elif isinstance(value, float):
            shown[key] = f"{value:.1%}" if math.isfinite(value) else "n/a"
        elif isinstance(value, int) and not isinstance(value, bool):
            shown[key] = f"{value:,}"
        else:
            shown[key] = str(value)
    return shown


def _preset_text(name: str) -> str:
    return resources.files("content").joinpath("workloads", f"{name}.toml").read_text("utf-8")


@cache
def preset_names() -> tuple[str, ...]:
    """Every preset under content/workloads, in the order the lab lists them."""
    folder = resources.files("content").joinpath("workloads")
    names = [e.name.removesuffix(".toml") for e in folder.iterdir() if e.name.endswith(".toml")]
    order = {name: tomllib.loads(_preset_text(name)).get("order", 100) for name in names}
    return tuple(sorted(names, key=lambda name: (order[name], name)))


@cache
def load_preset(name: str) -> Preset:
    names = preset_names()
    if name not in names:
        raise WorkloadError("workload", f"unknown workload {name!r} (one of {', '.join(names)})")
    data = tomllib.loads(_preset_text(name))
    workload = workload_from_knobs(data.get("knobs", {}))
    compare = dict(data.get("compare", {}))
    sglang = dict(data.get("sglang", {}))
    if compare:
        workload.replace(**compare)  # checked now, not when the lab opens it
    return Preset(
        name=name,
        title=str(data.get("title", name)),
        order=int(data.get("order", 100)),
        workload=workload,
        compare=compare,
        compare_label=str(data.get("compare_label", "compared run")),
        label=str(data.get("label", name)),
        expected=str(data.get("expected", "")).strip(),
        compare_expected=str(data.get("compare_expected", "")).strip(),
        sglang_expected=str(sglang.get("expected", SGLANG_FIGURES)).strip(),
        sglang_compare_expected=str(sglang.get("compare_expected", SGLANG_COMPARE_FIGURES)).strip(),
    )
