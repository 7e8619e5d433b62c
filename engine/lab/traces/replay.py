"""A request trace replayed through the engine: in order (the Mooncake paper's Figure 9
method), and as a hit-rate curve over pool capacities; a slice of it (``slice_entries``).

In order: each request, one after another, looks up the prefix cache
(``KVCacheManager.get_computed_blocks``), allocates what it misses (``allocate_slots``,
which caches its full blocks) and is freed (``free``), on the engine's own
``KVCacheManager`` and ``BlockPool``, at a pool of ``capacity_tokens // block_size``
usable blocks (plus vLLM's null block). Nothing else runs: no decode, no concurrency, so the
only thing that differs between capacities is what the pool's LRU eviction kept.

A request whose prompt needs more blocks than the pool has can never be admitted: it is
skipped and counted as a miss (its tokens count in the hit rate's denominator, none in its
numerator); ``skipped_requests`` says how many.

vLLM caps a hit at ``num_tokens - 1`` tokens (the last prompt token must be computed to
get logits), in whole blocks: a prompt of exactly k full blocks, all cached, reuses k - 1.
``hits`` is what vLLM reuses; ``uncapped_hits`` also counts that last full block when it
is cached (block-aligned: a partial last block is never cached, so never counted).

With time: engine/lab/traces/timed.py (a slice through the scheduler, by timestamps).

Standard library only.
"""

from __future__ import annotations

import gc
import math
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.lab.traces.request_trace import (
    TRACE_BLOCK_TOKENS,
    TraceEntry,
    TraceError,
)
from engine.vllm.kv_cache_manager import cdiv

Stop = Callable[[], bool]
STOP_CHECK_EVERY = 256  # requests between two looks at the stop flag

# The Mooncake paper's (FAST'25) Table 2 cache ratios, by trace.
PAPER_CACHE_RATIO: dict[str, float] = {
    "conversation": 0.40,
    "tool_and_agent": 0.59,
    "synthetic": 0.66,
}
# Figure 9's dashed line: one node's local cache, in tokens.
PAPER_LOCAL_CACHE_TOKENS = 3_000_000


@dataclass(frozen=True)
class RequestResult:
    """One request of an in-order replay (token counts)."""

    index: int  # in the replayed slice
    line: int  # in the trace file
    timestamp: int
    input_length: int
    hits: int  # tokens vLLM took from the cache (capped at input_length - 1)
    uncapped_hits: int  # cached full blocks at lookup, without the cap
    evictions: int  # cached blocks dropped to make room for it
    skipped: bool  # larger than the pool: never admitted, a miss
    cumulative_hit_rate: float


REQUEST_COLUMNS = tuple(RequestResult.__dataclass_fields__)


@dataclass
class InOrderReplay:
    """An in-order replay at one capacity (tokens; rates are of all prompt tokens)."""

    capacity_tokens: int
    block_size: int
    num_gpu_blocks: int  # usable blocks plus the null block
    requests: int = 0
    prompt_tokens: int = 0
    queries: int = 0  # PrefixCacheStats.queries: prompt tokens of admitted requests
    hits: int = 0  # PrefixCacheStats.hits
    uncapped_hits: int = 0
    skipped_requests: int = 0
    skipped_tokens: int = 0
    evictions: int = 0
    completed: bool = True
    seconds: float = 0.0
    per_request: list[RequestResult] = field(default_factory=list)
    # "sglang": engine/lab/traces/sglang/replay.py's, where ``block_size`` is the page size,
    # ``num_gpu_blocks`` the pool's pages and ``evictions`` counts tokens, not blocks
    engine: str = "vllm"

    @property
    def evicted_tokens(self) -> int:
        """Evictions in tokens, comparable across engines."""
        return self.evictions if self.engine == "sglang" else self.evictions * self.block_size

    @property
    def hit_rate(self) -> float:
        return self.hits / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def uncapped_hit_rate(self) -> float:
        return self.uncapped_hits / self.prompt_tokens if self.prompt_tokens else 0.0

    def count(
        self,
        index: int,
        entry: TraceEntry,
        hit: int,
        uncapped: int,
        evictions: int,
        skipped: bool,
        per_request: bool,
    ) -> None:
        """Add one replayed request's figures (a skipped one: no hit, its tokens missed),
        and its row when ``per_request``."""
        num_tokens = entry.input_length
        self.requests += 1
        self.prompt_tokens += num_tokens
        if skipped:
            self.skipped_requests += 1
            self.skipped_tokens += num_tokens
        else:
            self.queries += num_tokens
            self.hits += hit
            self.uncapped_hits += uncapped
            self.evictions += evictions
        if per_request:
            self.per_request.append(
                RequestResult(
                    index=index,
                    line=entry.line,
                    timestamp=entry.timestamp,
                    input_length=num_tokens,
                    hits=hit,
                    uncapped_hits=uncapped,
                    evictions=evictions,
                    skipped=skipped,
                    cumulative_hit_rate=self.hits / self.prompt_tokens,
                )
            )

    def row(self) -> dict[str, Any]:
        """The figures without the per-request rows (a CSV line, a JSON object)."""
        values = {k: v for k, v in asdict(self).items() if k != "per_request"}
        return {**values, "hit_rate": self.hit_rate, "uncapped_hit_rate": self.uncapped_hit_rate}


POINT_COLUMNS = (
    "capacity_tokens",
    "block_size",
    "num_gpu_blocks",
    "requests",
    "prompt_tokens",
    "queries",
    "hits",
    "hit_rate",
    "uncapped_hits",
    "uncapped_hit_rate",
    "skipped_requests",
    "skipped_tokens",
    "evictions",
    "completed",
    "seconds",
)


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector off (as it was after): a replay makes no cyclic
    garbage (its requests go by reference counting, and its pool is unlinked at the end),
    but a pool of 300,000 blocks made the collector's passes a third of the replay."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- the curve ---------------------------------------------------------------------------------


def capacities_for(
    entries: Sequence[TraceEntry], block_size: int = TRACE_BLOCK_TOKENS, points: int = 8
) -> list[int]:
    """``default_capacities`` from the requests alone (no hashes needed): the capacities
    both engines' curves share."""
    mean_prompt = sum(entry.input_length for entry in entries) / len(entries)
    whole_trace = sum(cdiv(entry.input_length, block_size) for entry in entries) * block_size
    low = max(block_size, int(mean_prompt / 2) // block_size * block_size)
    return log_spaced(low, max(low, whole_trace), points, block_size)


def paper_comparison(trace_name: str, unlimited: InOrderReplay) -> dict[str, Any]:
    """The unlimited-capacity hit rate beside the paper's cache ratio, as numbers for a
    sentence ("vLLM reuses {hit_rate:.1%} of prompt tokens; the paper reports ...")."""
    paper = PAPER_CACHE_RATIO.get(trace_name)
    return {
        "trace": trace_name,
        "hit_rate": unlimited.hit_rate,
        "uncapped_hit_rate": unlimited.uncapped_hit_rate,
        "paper_cache_ratio": paper,
        "difference": None if paper is None else unlimited.hit_rate - paper,
        "uncapped_difference": None if paper is None else unlimited.uncapped_hit_rate - paper,
        "capacity_tokens": unlimited.capacity_tokens,
        "evictions": unlimited.evictions,
    }


def trace_name_of(path: str) -> str:
    """``conversation`` for ``.../conversation_trace.jsonl(.gz)``: the paper's names."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".gz", ".jsonl", "_trace"):
        name = name.removesuffix(suffix)
    return name


# -- the floor: a plain LRU over the same ids --------------------------------------------------


@dataclass(frozen=True)
class FloorResult:
    requests: int
    prompt_tokens: int
    hits: int  # capped as vLLM caps them
    uncapped_hits: int
    skipped_requests: int

    @property
    def hit_rate(self) -> float:
        return self.hits / self.prompt_tokens if self.prompt_tokens else 0.0


def lru_floor(entries: Sequence[TraceEntry], capacity_tokens: int) -> FloorResult:
    """The in-order replay at block size 512 as a plain dict + OrderedDict LRU of hash ids.

    Mirrors the pool: ``capacity_tokens // 512`` blocks; a request's hits leave the LRU
    while it holds them, it takes room for all its blocks (the partial last one too),
    evicting the least recently freed; its full blocks come back deepest first (freed
    last block first, so evicted first) and its partial block is not kept. It keys blocks
    by the raw id, so it assumes what Mooncake's ids are (prefix hashes: an id is always
    at the same position after the same ids); the engine needs no such assumption. One
    difference it leaves out: when the cap turns a last cached block into a recomputed
    one, the pool keeps both copies for a while, the LRU one.
    """
    capacity = capacity_tokens // TRACE_BLOCK_TOKENS
    lru: OrderedDict[int, None] = OrderedDict()
    hits = uncapped_hits = skipped = total = 0
    for entry in entries:
        ids = entry.hash_ids
        num_tokens = entry.input_length
        total += num_tokens
        if len(ids) > capacity:
            skipped += 1
            continue
        full = num_tokens // TRACE_BLOCK_TOKENS
        found = 0
        while found < full and ids[found] in lru:
            found += 1
        capped = min(found, (num_tokens - 1) // TRACE_BLOCK_TOKENS)
        hits += capped * TRACE_BLOCK_TOKENS
        uncapped_hits += found * TRACE_BLOCK_TOKENS
        for hash_id in ids[:capped]:
            del lru[hash_id]
        while len(lru) + len(ids) > capacity:
            lru.popitem(last=False)
        for hash_id in reversed(ids[:full]):
            lru[hash_id] = None
            lru.move_to_end(hash_id)
    return FloorResult(len(entries), total, hits, uncapped_hits, skipped)


def slice_entries(
    entries: Sequence[TraceEntry],
    requests: int | None = None,
    until_ms: int | None = None,
    window_ms: tuple[int, int] | None = None,
) -> list[TraceEntry]:
    """The requests arriving in ``window_ms`` (``(start, end)``: ``start <= timestamp <
    end``, the trace's own ms), the first ``requests`` of them, and of those the ones
    arriving before ``until_ms`` ms after the first one."""
    chosen = list(entries)
    if window_ms is not None:
        start, end = window_ms
        chosen = [entry for entry in chosen if start <= entry.timestamp < end]
    if requests is not None:
        chosen = chosen[:requests]
    if until_ms is not None and chosen:
        first = chosen[0].timestamp
        chosen = [entry for entry in chosen if entry.timestamp - first < until_ms]
    if not chosen:
        raise TraceError(0, None, "the slice holds no request")
    return chosen


def log_spaced(low: int, high: int, points: int, block_size: int) -> list[int]:
    """``points`` capacities from ``low`` to ``high`` tokens (both kept), log-spaced, each
    rounded down to whole blocks (at least one)."""
    if points < 2 or high <= low:
        return [high]
    ratio = math.exp(math.log(high / low) / (points - 1))
    inner = (int(low * ratio**i) // block_size * block_size for i in range(points - 1))
    return sorted({*(max(block_size, c) for c in inner), high})
