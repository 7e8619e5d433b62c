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

With time: engine/lab/trace_timed.py (a slice through the scheduler, by timestamps).

Standard library only.
"""

from __future__ import annotations

import gc
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.lab.request_trace import (
    TRACE_BLOCK_TOKENS,
    PromptHashes,
    TraceEntry,
    TraceError,
    prompt_token_ids,
    token_range,
)
from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_manager import cdiv
from engine.vllm.kv_cache_utils import BlockHash, KVCacheBlock
from engine.vllm.kv_events import KVCacheEvent
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler

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
class HashedTrace:
    """A trace's requests with their prompts' block hashes at one block size.

    The hashes do not depend on the pool, so one HashedTrace serves every capacity."""

    entries: list[TraceEntry]
    block_size: int
    block_hashes: list[list[BlockHash]]

    @classmethod
    def of(cls, entries: Sequence[TraceEntry], block_size: int = TRACE_BLOCK_TOKENS) -> HashedTrace:
        hasher = PromptHashes(block_size)
        return cls(list(entries), block_size, hasher.all_block_hashes(entries))

    @property
    def prompt_tokens(self) -> int:
        return sum(entry.input_length for entry in self.entries)

    @property
    def prompt_blocks(self) -> int:
        """Blocks every prompt takes, partial last blocks included: a pool this big (in
        usable blocks) never evicts in an in-order replay."""
        return sum(cdiv(entry.input_length, self.block_size) for entry in self.entries)

    @property
    def whole_trace_capacity(self) -> int:
        """Capacity in tokens that holds every block of the trace."""
        return self.prompt_blocks * self.block_size


class ReplayRequest(Request):
    """A trace request for the in-order replay: vLLM's ``Request`` with its prompt's
    block hashes given (computed once by ``PromptHashes``, the same ones vLLM's hasher
    gives the derived tokens) and its token ids derived only when read.

    A trace of 12,000 prompts of 12,000 tokens is 145 million token ids: building them
    for every request at every capacity took longer than the whole replay. What the
    cache reads of a request (``num_tokens``, ``block_hashes``) is exact. The in-order
    replay generates no output, so the hashes never grow.
    """

    def __init__(self, request_id: str, entry: TraceEntry, block_hashes: list[BlockHash]) -> None:
        super().__init__(request_id, (), max_tokens=max(1, entry.output_length))
        self.entry = entry
        self.block_hashes = block_hashes
        # The attributes the base class reads as fields, sized without building them.
        self._num_prompt_tokens = entry.input_length

    @property
    def prompt_token_ids(self) -> list[int]:
        return prompt_token_ids(self.entry)

    @prompt_token_ids.setter
    def prompt_token_ids(self, value: list[int]) -> None:
        """Request.__init__ sets the empty prompt it was given: the entry's is derived."""

    @property
    def num_tokens(self) -> int:
        return self._num_prompt_tokens

    @property
    def num_prompt_tokens(self) -> int:
        return self._num_prompt_tokens

    @property
    def all_token_ids(self) -> list[int]:
        return prompt_token_ids(self.entry)

    def append_output_token_ids(self, token_ids: int | Sequence[int]) -> None:
        raise NotImplementedError("the in-order replay generates no output")


class _RangeTokens(list[int]):
    """A trace prompt's token ids as ``BlockStored`` reads them: only a slice, built for
    that range alone (``token_range``), never the whole prompt."""

    def __init__(self, entry: TraceEntry) -> None:
        super().__init__()
        self.entry = entry

    def __len__(self) -> int:
        return self.entry.input_length

    def __getitem__(self, index: Any) -> Any:
        if not isinstance(index, slice):
            return prompt_token_ids(self.entry)[index]
        start, stop, step = index.indices(self.entry.input_length)
        assert step == 1, "an event slices a range"
        return token_range(self.entry.hash_ids, start, stop)[: max(0, stop - start)]


class EventReplayRequest(ReplayRequest):
    """A ReplayRequest whose pool publishes KV events: the ``BlockStored`` event copies the
    stored blocks' token ids, so they are derived for those blocks only (a whole prompt
    per request was most of a fleet's replay)."""

    @property
    def all_token_ids(self) -> list[int]:
        return _RangeTokens(self.entry)


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
    # "sglang": engine/lab/trace_replay_sglang.py's, where ``block_size`` is the page size,
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


class EvictionCounter:
    """Counts the cached blocks the pool takes back from its free queue to reuse them:
    each loses its hash (an eviction; vLLM's ``BlockRemoved`` event with events on).

    ``get_new_blocks`` takes them in one ``popleft_n`` call, hashes still on, so one
    wrapper call a request does it. (The workload lab's PoolCounter also keeps the pool's
    usage counts, wrapping calls made per block: a tenth of the in-order replay.)
    """

    def __init__(self, pool: BlockPool) -> None:
        self.queue = queue = pool.free_block_queue
        self.evictions = 0
        popleft_n = queue.popleft_n

        def counting_popleft_n(n: int) -> list[KVCacheBlock]:
            blocks = popleft_n(n)
            self.evictions += n - [block._block_hash for block in blocks].count(None)
            return blocks

        queue.popleft_n = counting_popleft_n  # type: ignore[method-assign]

    def detach(self) -> None:
        vars(self.queue).pop("popleft_n", None)


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


def _unlink(pool: BlockPool) -> None:
    """Let a pool go by reference counting (its free queue links blocks both ways)."""
    queue = pool.free_block_queue
    for block in (queue.fake_free_list_head, *pool.blocks, queue.fake_free_list_tail):
        block.prev_free_block = block.next_free_block = None


def num_gpu_blocks_for(capacity_tokens: int, block_size: int) -> int:
    """The pool for a capacity: whole blocks of it, plus vLLM's null block."""
    return capacity_tokens // block_size + 1


def replay_in_order(
    trace: HashedTrace,
    capacity_tokens: int,
    per_request: bool = False,
    stop: Stop | None = None,
) -> InOrderReplay:
    """Replay the trace in order at this capacity (see the module's docstring).

    ``per_request`` keeps a RequestResult per request; ``stop`` is asked every few hundred
    requests and ends the replay early when it says True (``completed`` is then False)."""
    with _no_cyclic_gc():
        return _replay_in_order(trace, capacity_tokens, per_request, stop)


def _replay_in_order(
    trace: HashedTrace, capacity_tokens: int, per_request: bool, stop: Stop | None
) -> InOrderReplay:
    started = time.perf_counter()
    server = InOrderServer(capacity_tokens, trace.block_size)
    for index, (entry, hashes) in enumerate(zip(trace.entries, trace.block_hashes, strict=True)):
        if stop is not None and index % STOP_CHECK_EVERY == 0 and index and stop():
            server.result.completed = False
            break
        server.serve(index, entry, hashes, per_request)
    result = server.close()
    result.seconds = time.perf_counter() - started
    return result


class InOrderServer:
    """One vLLM pool serving trace requests one at a time, in order: what
    ``replay_in_order`` loops over, and what a fleet's replica is
    (engine/lab/fleet/). ``enable_kv_cache_events`` queues vLLM's KV events
    (``take_events``), as a replica publishes them to a router."""

    def __init__(
        self, capacity_tokens: int, block_size: int, enable_kv_cache_events: bool = False
    ) -> None:
        num_gpu_blocks = num_gpu_blocks_for(capacity_tokens, block_size)
        if num_gpu_blocks < 2:
            raise ValueError(
                f"a capacity of {capacity_tokens} tokens holds no {block_size}-token block"
            )
        self.result = InOrderReplay(capacity_tokens, block_size, num_gpu_blocks)
        self.scheduler = Scheduler(
            num_gpu_blocks, block_size, enable_kv_cache_events=enable_kv_cache_events
        )
        self.events = enable_kv_cache_events
        self.manager = self.scheduler.kv_cache_manager
        self.pool = self.manager.block_pool
        self.counter = EvictionCounter(self.pool)
        self.usable = num_gpu_blocks - 1

    def serve(
        self, index: int, entry: TraceEntry, hashes: list[BlockHash], per_request: bool = False
    ) -> tuple[int, int, int, bool]:
        """Request ``index`` looked up, allocated, cached and freed: (hit tokens, uncapped
        hit tokens, evicted blocks, skipped), also counted in ``result``."""
        manager, pool = self.manager, self.pool
        block_size = self.result.block_size
        num_tokens = entry.input_length
        hit = uncapped = evictions = 0
        skipped = cdiv(num_tokens, block_size) > self.usable
        if not skipped:
            request = (EventReplayRequest if self.events else ReplayRequest)(
                str(index), entry, hashes
            )
            computed_blocks, hit = manager.get_computed_blocks(request)
            uncapped = hit
            # The cap binds only when the prompt is whole blocks and all but the last hit.
            if (
                num_tokens % block_size == 0
                and hit == num_tokens - block_size
                and pool.get_cached_block(hashes[-1]) is not None
            ):
                uncapped = num_tokens
            allocated = manager.allocate_slots(request, num_tokens - hit, hit, computed_blocks)
            assert allocated is not None, "an in-order replay always has room for one request"
            manager.record_prefix_cache_stats(request, hit)
            manager.free(request)
            evictions, self.counter.evictions = self.counter.evictions, 0
        self.result.count(index, entry, hit, uncapped, evictions, skipped, per_request)
        return hit, uncapped, evictions, skipped

    def take_events(self) -> list[KVCacheEvent]:
        return self.manager.take_events()

    def close(self) -> InOrderReplay:
        """Let the pool go (by reference counting) and give the replay's figures."""
        self.counter.detach()
        _unlink(self.pool)
        stats = self.manager.prefix_cache_stats
        assert stats is not None
        result = self.result
        assert (result.queries, result.hits) == (stats.queries, stats.hits), "vLLM's counters"
        return result


# -- the curve ---------------------------------------------------------------------------------


def default_capacities(trace: HashedTrace, points: int = 8) -> list[int]:
    """``points`` capacities in tokens, log-spaced from half the mean prompt (less than one
    prompt) to the whole trace's blocks (nothing is ever evicted), whole blocks each."""
    return capacities_for(trace.entries, trace.block_size, points)


def capacities_for(
    entries: Sequence[TraceEntry], block_size: int = TRACE_BLOCK_TOKENS, points: int = 8
) -> list[int]:
    """``default_capacities`` from the requests alone (no hashes needed): the capacities
    both engines' curves share."""
    mean_prompt = sum(entry.input_length for entry in entries) / len(entries)
    whole_trace = sum(cdiv(entry.input_length, block_size) for entry in entries) * block_size
    low = max(block_size, int(mean_prompt / 2) // block_size * block_size)
    return log_spaced(low, max(low, whole_trace), points, block_size)


def hit_rate_curve(
    trace: HashedTrace, capacities: Sequence[int], stop: Stop | None = None
) -> Iterator[InOrderReplay]:
    """One in-order replay per capacity, yielded as each ends (for progress); the hashes
    are the trace's, computed once. Ends early when ``stop`` says True (the replay it
    stopped is yielded with ``completed`` False)."""
    for capacity in capacities:
        if stop is not None and stop():
            return
        point = replay_in_order(trace, capacity, stop=stop)
        yield point
        if not point.completed:
            return


def replay_unlimited(trace: HashedTrace, stop: Stop | None = None) -> InOrderReplay:
    """The in-order replay with a pool that holds every block of the trace: nothing is
    evicted, so every block seen before is found (the paper's cache ratio's setting)."""
    return replay_in_order(trace, trace.whole_trace_capacity, stop=stop)


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
