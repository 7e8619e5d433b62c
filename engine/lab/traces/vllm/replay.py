"""A request trace replayed in order through vLLM's own ``KVCacheManager`` and
``BlockPool`` (see traces/replay.py for the method), and its hit-rate curve."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from engine.lab.traces.replay import (
    InOrderReplay,
    Stop,
    capacities_for,
    curve,
    replay_entries,
)
from engine.lab.traces.request_trace import (
    TRACE_BLOCK_TOKENS,
    PromptHashes,
    TraceEntry,
    prompt_token_ids,
    token_range,
)
from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_manager import cdiv
from engine.vllm.kv_cache_utils import BlockHash, KVCacheBlock
from engine.vllm.kv_events import KVCacheEvent
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler


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


def _unlink(pool: BlockPool) -> None:
    """Let a pool go by reference counting (its free queue links blocks both ways)."""
    queue = pool.free_block_queue
    for block in (queue.fake_free_list_head, *pool.blocks, queue.fake_free_list_tail):
        block.prev_free_block = block.next_free_block = None


def num_gpu_blocks_for(capacity_tokens: int, block_size: int) -> int:
    """The pool for a capacity: whole blocks of it, plus vLLM's null block."""
    return capacity_tokens // block_size + 1


class VLLMReplay:
    """vLLM's side of an in-order replay (``EngineReplay``) at one capacity: each
    request looks up the cache, allocates what it misses and is freed, on the engine's
    own ``KVCacheManager`` and ``BlockPool`` (see the module's docstring)."""

    def __init__(
        self, trace: HashedTrace, capacity_tokens: int, enable_kv_cache_events: bool = False
    ) -> None:
        block_size = trace.block_size
        num_gpu_blocks = num_gpu_blocks_for(capacity_tokens, block_size)
        if num_gpu_blocks < 2:
            raise ValueError(
                f"a capacity of {capacity_tokens} tokens holds no {block_size}-token block"
            )
        self.trace, self.block_size, self.usable = trace, block_size, num_gpu_blocks - 1
        self.result = InOrderReplay(capacity_tokens, block_size, num_gpu_blocks)
        # (a fleet's replica publishes its KV events to the router: engine/lab/fleet/)
        scheduler = Scheduler(
            num_gpu_blocks, block_size, enable_kv_cache_events=enable_kv_cache_events
        )
        self.request_type = EventReplayRequest if enable_kv_cache_events else ReplayRequest
        self.manager = scheduler.kv_cache_manager
        self.pool = self.manager.block_pool
        self.counter = EvictionCounter(self.pool)

    def fits(self, entry: TraceEntry) -> bool:
        return cdiv(entry.input_length, self.block_size) <= self.usable

    def replay_one(self, index: int, entry: TraceEntry) -> tuple[int, int, int]:
        manager, pool, block_size = self.manager, self.pool, self.block_size
        hashes = self.trace.block_hashes[index]
        num_tokens = entry.input_length
        request = self.request_type(str(index), entry, hashes)
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
        return hit, uncapped, evictions

    def take_events(self) -> list[KVCacheEvent]:
        return self.manager.take_events()

    def finish(self) -> None:
        self.counter.detach()
        _unlink(self.pool)
        stats = self.manager.prefix_cache_stats
        assert stats is not None
        assert (self.result.queries, self.result.hits) == (stats.queries, stats.hits)


def replay_in_order(
    trace: HashedTrace,
    capacity_tokens: int,
    per_request: bool = False,
    stop: Stop | None = None,
) -> InOrderReplay:
    """Replay the trace in order at this capacity (see the module's docstring and
    ``replay_entries``)."""
    replay = VLLMReplay(trace, capacity_tokens)
    return replay_entries(replay, trace.entries, per_request, stop)


def default_capacities(trace: HashedTrace, points: int = 8) -> list[int]:
    """``points`` capacities in tokens, log-spaced from half the mean prompt (less than one
    prompt) to the whole trace's blocks (nothing is ever evicted), whole blocks each."""
    return capacities_for(trace.entries, trace.block_size, points)


def hit_rate_curve(
    trace: HashedTrace, capacities: Sequence[int], stop: Stop | None = None
) -> Iterator[InOrderReplay]:
    """The in-order replay at each capacity (``curve``); the hashes are the trace's,
    computed once."""
    return curve(lambda capacity: replay_in_order(trace, capacity, stop=stop), capacities, stop)


def replay_unlimited(trace: HashedTrace, stop: Stop | None = None) -> InOrderReplay:
    """The in-order replay with a pool that holds every block of the trace: nothing is
    evicted, so every block seen before is found (the paper's cache ratio's setting)."""
    return replay_in_order(trace, trace.whole_trace_capacity, stop=stop)
