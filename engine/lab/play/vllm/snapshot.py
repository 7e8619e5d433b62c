"""A complete, plain-data picture of the engine at one moment.

Every step of a timeline carries one, so a viewer can render any step without
looking at its neighbours (step back, scrub and deep links come for free).
Everything here is immutable and JSON-serialisable via ``to_dict``.
"""

from __future__ import annotations

import dataclasses
import logging
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from engine.lab.play.records import EventRecord, LogLine
from engine.vllm.aux_output import AuxOutputWorkerConnector
from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_manager import KVCacheManager
from engine.vllm.kv_cache_utils import (
    FreeKVCacheBlockQueue,
    KVCacheBlock,
    generate_block_hash_extra_keys,
    get_block_hash,
)
from engine.vllm.kv_events import KVCacheEvent
from engine.vllm.kv_offload import SimpleCPUOffloadScheduler
from engine.vllm.metrics import PrefixCacheCounters, PrefixCacheStats
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler

BlockState = Literal["null", "held", "free-cached", "free-empty"]
HASH_LABEL_LENGTH = 6


def hash_label(block_hash: bytes) -> str:
    """A short name for a block hash: the first hex digits of the digest."""
    return block_hash.hex()[:HASH_LABEL_LENGTH]


def block_state(block: KVCacheBlock) -> BlockState:
    if block.is_null:
        return "null"
    if block.ref_cnt > 0:
        return "held"
    return "free-cached" if block.block_hash is not None else "free-empty"


@dataclass(frozen=True)
class BlockRecord:
    block_id: int
    ref_cnt: int
    block_hash: str | None  # full hex digest (without the group id)
    hash_label: str | None
    state: BlockState


@dataclass(frozen=True)
class HashMapEntry:
    block_hash: str
    hash_label: str
    block_ids: tuple[int, ...]  # lookups return the first


@dataclass(frozen=True)
class ChainLink:
    """One full block of a request: hash = H(parent hash, its tokens, extra keys)."""

    hash_label: str
    parent_label: str | None  # None: the chain starts at NONE_HASH
    first_token: int  # position of the block's first token in the request
    token_ids: tuple[int, ...]
    extra_keys: str | None  # as written into the hash input, e.g. "('cache_salt', 'alice')"


@dataclass(frozen=True)
class RequestRecord:
    request_id: str
    status: str
    num_prompt_tokens: int
    num_tokens: int
    num_computed_tokens: int
    num_cached_tokens: int  # prefix-cache hit at first admission, -1 before it
    num_preemptions: int
    block_ids: tuple[int, ...]
    chain: tuple[ChainLink, ...]  # the request's own full-block hashes, parent to child
    cache_salt: str | None
    skip_reading_prefix_cache: bool

    @property
    def block_hash_labels(self) -> tuple[str, ...]:
        return tuple(link.hash_label for link in self.chain)


@dataclass
class Stats(PrefixCacheCounters):
    """Cumulative prefix-cache counters since the scenario started, in tokens.

    Never changed once made (``plus`` makes a new one); not frozen only because
    the counters it shares with vLLM's ``PrefixCacheStats`` are not.
    """

    resets: int = 0

    def plus(self, delta: PrefixCacheStats | None) -> Stats:
        if delta is None:
            return self
        sums = {
            field.name: getattr(self, field.name) + getattr(delta, field.name)
            for field in dataclasses.fields(PrefixCacheCounters)
        }
        return Stats(**sums, resets=self.resets + int(delta.reset))


@dataclass(frozen=True)
class StoreRecord:
    """A CPU offload store in flight: GPU block i is being copied into CPU block i."""

    store_event: int
    gpu_block_ids: tuple[int, ...]
    cpu_block_ids: tuple[int, ...]


@dataclass(frozen=True)
class OffloadRecord:
    """The CPU side of CPU offload: its own pool, free queue and hash map."""

    cpu_blocks: tuple[BlockRecord, ...]
    cpu_free_queue: tuple[int, ...]
    cpu_hash_map: tuple[HashMapEntry, ...]
    stores_in_flight: tuple[StoreRecord, ...]


@dataclass(frozen=True)
class AuxOutputRecord:
    """The auxiliary output generation on both sides, and the outputs in flight."""

    scheduler_generation: int
    worker_generation: int
    outputs_in_flight: int


@dataclass(frozen=True)
class Snapshot:
    blocks: tuple[BlockRecord, ...]
    free_queue: tuple[int, ...]  # head (reused first) to tail
    hash_map: tuple[HashMapEntry, ...]  # in the map's own order
    requests: tuple[RequestRecord, ...]  # in arrival order, finished ones included
    running: tuple[str, ...]
    waiting: tuple[str, ...]
    logs: tuple[LogLine, ...]  # emitted during this step
    events: tuple[EventRecord, ...]  # emitted during this step
    stats: Stats
    usage: float
    offload: OffloadRecord | None = None  # None: no CPU offload in this scenario
    aux_output: AuxOutputRecord | None = None  # None: no auxiliary outputs
    engine_dead: bool = False  # the engine core died (an assertion failed in it)

    def block(self, block_id: int) -> BlockRecord:
        return self.blocks[block_id]

    def request(self, request_id: str) -> RequestRecord:
        return next(r for r in self.requests if r.request_id == request_id)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["events"] = [event.to_dict() for event in self.events]
        return data


def _event_value(value: Any) -> Any:
    """Event fields as JSON-safe values: 64-bit int hashes as 16 hex digits,
    since JSON numbers lose precision above 2**53."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int) and value >= 2**53:
        return f"{value:016x}"
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, tuple | list):
        if all(type(v) is int and v < 2**53 for v in value):
            return list(value)  # (token ids: each as it is, without a call apiece)
        return [_event_value(v) for v in value]
    return value


def event_record(event: KVCacheEvent) -> EventRecord:
    fields = tuple(
        (f.name, _event_value(getattr(event, f.name))) for f in dataclasses.fields(event)
    )
    return EventRecord(type(event).__name__, fields)


def key_text(key: tuple[Any, ...]) -> str:
    """An extra key as the hash input holds it; a digest (prompt embeddings) as the first
    16 hex digits of its SHA-256, ``'sha256:1a2b…'``."""
    shown = tuple(f"sha256:{v.hex()[:16]}" if isinstance(v, bytes) else v for v in key)
    return repr(shown)


def _chain_links(
    request: Request, block_size: int, first: int, parent: str | None
) -> list[ChainLink]:
    """The chain links of the request's blocks from position ``first`` on."""
    links = []
    for position in range(first, len(request.block_hashes)):
        start = position * block_size
        extra_keys, _ = generate_block_hash_extra_keys(request, start, start + block_size, 0)
        label = hash_label(request.block_hashes[position])
        links.append(
            ChainLink(
                hash_label=label,
                parent_label=parent,
                first_token=start,
                token_ids=tuple(request.all_token_ids[start : start + block_size]),
                extra_keys=None if extra_keys is None else ", ".join(map(key_text, extra_keys)),
            )
        )
        parent = label
    return links


# The manager's own get_block_ids: a request's blocks read from its map (request_record).
_GET_BLOCK_IDS = KVCacheManager.get_block_ids

# Block records by (id, ref_cnt, hash key, null): a block that goes back to an earlier
# state gets the record it had, not a new one. Cleared when it grows past the bound.
_BLOCK_RECORDS: dict[tuple[int, int, bytes | None, bool], BlockRecord] = {}
_BLOCK_RECORDS_BOUND = 1 << 16


def block_record(block: KVCacheBlock) -> BlockRecord:
    key = (block.block_id, block.ref_cnt, block.block_hash, block.is_null)
    record = _BLOCK_RECORDS.get(key)
    if record is None:
        if len(_BLOCK_RECORDS) >= _BLOCK_RECORDS_BOUND:
            _BLOCK_RECORDS.clear()
        record = _BLOCK_RECORDS[key] = BlockRecord(
            block_id=block.block_id,
            ref_cnt=block.ref_cnt,
            block_hash=get_block_hash(block.block_hash).hex() if block.block_hash else None,
            hash_label=hash_label(get_block_hash(block.block_hash)) if block.block_hash else None,
            state=block_state(block),
        )
    return record


class _PoolWatch:
    """Every write to one pool's blocks since the watch was put on them, in order: the
    blocks given another value (ref count, hash...), and the blocks (and the free queue's
    head) given another next link. Lab machinery, like the step's recorder: the pool's
    blocks become a subclass of theirs whose attribute writes are noted here, then made
    as before; the engine's code and its reads are the same.

    A snapshot then remakes the records of the blocks written to since the last one, and
    walks the free queue again only after a next link was written (the queue is the walk
    of next links from the head)."""

    def __init__(self, pool: BlockPool) -> None:
        self.blocks = pool.blocks
        self.queue = pool.free_block_queue
        self.head = self.queue.fake_free_list_head
        self.epoch = 0  # a new one each time the lists below start afresh
        self.written: list[KVCacheBlock] = []
        self.linked: list[KVCacheBlock] = []
        written, linked = self.written, self.linked
        set_attribute = object.__setattr__

        def __setattr__(block: KVCacheBlock, name: str, value: Any) -> None:
            if name == "next_free_block":
                linked.append(block)
            elif name != "prev_free_block":  # (the queue is read by its next links)
                written.append(block)
            set_attribute(block, name, value)

        watched = type(
            KVCacheBlock.__name__,
            (KVCacheBlock,),
            {
                "__slots__": (),
                "__setattr__": __setattr__,
                "__module__": KVCacheBlock.__module__,
                "__qualname__": KVCacheBlock.__qualname__,  # (its repr is the block's)
            },
        )
        for block in (*self.blocks, self.head, self.queue.fake_free_list_tail):
            block.__class__ = watched

    def covers(self, pool: BlockPool) -> bool:
        """Whether the pool still has the blocks and queue this watch is on."""
        queue = pool.free_block_queue
        return (
            pool.blocks is self.blocks
            and queue is self.queue
            and (queue.fake_free_list_head is self.head)
        )

    def start_afresh(self) -> None:
        """Forget the writes so far: a reader that has not read them all reads every block."""
        self.epoch += 1
        del self.written[:], self.linked[:]


# The watches put on pools, by pool: one per pool, however many takers read it.
_WATCHES: weakref.WeakKeyDictionary[BlockPool, _PoolWatch] = weakref.WeakKeyDictionary()
# Past this many writes per block, a watch's lists start afresh (after the reader that
# noticed has read them).
_WRITES_PER_BLOCK_KEPT = 8


def _watch(pool: BlockPool) -> _PoolWatch | None:
    """The pool's watch (put on now if it has none or another queue or blocks); None
    where the blocks are not plain KVCacheBlocks numbered by their place in the pool."""
    watch = _WATCHES.get(pool)
    if watch is not None and watch.covers(pool):
        return watch
    queue = pool.free_block_queue
    sentinels = (queue.fake_free_list_head, queue.fake_free_list_tail)
    blocks = pool.blocks
    if not all(type(b) is KVCacheBlock for b in (*blocks, *sentinels)) or any(
        b.block_id != i for i, b in enumerate(blocks)
    ):
        return None
    watch = _WATCHES[pool] = _PoolWatch(pool)
    return watch


@dataclass
class _PoolSeen:
    """One pool as a taker last read it: the records made, its free queue, and how far
    into the pool's watch it had read."""

    watch: _PoolWatch | None
    epoch: int
    written: int
    linked: int
    records: tuple[BlockRecord, ...]
    free_queue: tuple[int, ...]


class SnapshotTaker:
    """Takes the snapshots of one run, each remaking only what changed since the last.

    Every step's snapshot holds every block: a 10,000-block pool over hundreds of steps
    would be millions of block reads. The pool's watch (_PoolWatch) names the blocks
    written to since the last snapshot: only those get a record made, and the free queue
    is walked again only when a next link was written. A request's chain only grows, so
    only its new links are made, and a hash map entry seen before is not made again.
    Each snapshot equals one taken from scratch.
    """

    def __init__(self) -> None:
        self._pools: dict[int, tuple[BlockPool, _PoolSeen]] = {}
        self._chains: dict[int, tuple[Request, list[bytes], tuple[ChainLink, ...]]] = {}
        self._entries: dict[tuple[bytes, tuple[int, ...]], HashMapEntry] = {}
        self._requests: dict[int, tuple[Request, tuple[object, ...], RequestRecord]] = {}

    def pool_records(self, pool: BlockPool) -> tuple[tuple[BlockRecord, ...], tuple[int, ...]]:
        """The pool's block records and its free queue (head first)."""
        watch = _watch(pool)
        known = self._pools.get(id(pool))
        seen = known[1] if known is not None and known[0] is pool else None
        read = None
        if watch is not None and seen is not None and seen.watch is watch:
            read = _read_since(watch, seen)
        if read is None:
            read = tuple(map(block_record, pool.blocks)), _free_queue(pool.free_block_queue)
        records, free_queue = read
        if watch is not None and len(watch.written) + len(watch.linked) > (
            _WRITES_PER_BLOCK_KEPT * len(watch.blocks)
        ):
            watch.start_afresh()
        read_to = (watch.epoch, len(watch.written), len(watch.linked)) if watch else (0, 0, 0)
        self._pools[id(pool)] = (pool, _PoolSeen(watch, *read_to, records, free_queue))
        return records, free_queue

    def chain(self, request: Request, block_size: int) -> tuple[ChainLink, ...]:
        """The request's chain: the links of the hashes seen before, and the new ones."""
        hashes = request.block_hashes
        known = self._chains.get(id(request))
        if known is not None and known[0] is request and hashes == known[1]:
            return known[2]  # (most requests of most steps: nothing new)
        if known is not None and known[0] is request and hashes[: len(known[1])] == known[1]:
            links = known[2]
            if len(links) < len(hashes):
                parent = links[-1].hash_label if links else None
                links += tuple(_chain_links(request, block_size, len(links), parent))
        else:
            links = tuple(_chain_links(request, block_size, 0, None))
        self._chains[id(request)] = (request, list(hashes), links)
        return links

    def hash_map_entries(self, pool: BlockPool) -> tuple[HashMapEntry, ...]:
        """The pool's hash map in its own order; an entry unchanged since an earlier
        snapshot is the record made then."""
        entries = self._entries
        made = []
        # (the map's own entries, in its order: items() makes a list of every entry's
        # blocks, hundreds per snapshot in a large pool; a key's one block is not a dict)
        for key, cached in pool.cached_block_hash_to_block._cache.items():
            block_ids = (
                (cached.block_id,)
                if isinstance(cached, KVCacheBlock)
                else tuple(b.block_id for b in cached.values())
            )
            entry = entries.get((key, block_ids))
            if entry is None:
                block_hash = get_block_hash(key)
                entry = entries[key, block_ids] = HashMapEntry(
                    block_hash=block_hash.hex(),
                    hash_label=hash_label(block_hash),
                    block_ids=block_ids,
                )
            made.append(entry)
        return tuple(made)

    def request_record(self, request: Request, scheduler: Scheduler) -> RequestRecord:
        """The request's record; the one made before while nothing of it changed (a
        finished request stays listed, unchanged, for the rest of the timeline)."""
        manager = scheduler.kv_cache_manager
        if type(manager).get_block_ids is _GET_BLOCK_IDS:  # (its one group's list, read)
            blocks = manager.req_to_blocks.get(request.request_id)
            block_ids = tuple([b.block_id for b in blocks]) if blocks else ()
        else:
            block_ids = tuple(manager.get_block_ids(request.request_id)[0])
        fields = (
            request.request_id,
            request.status._name_,  # (.name: a descriptor's call, 25,000 per large build)
            request.num_prompt_tokens,
            request.num_tokens,
            request.num_computed_tokens,
            request.num_cached_tokens,
            request.num_preemptions,
            block_ids,
            self.chain(request, scheduler.block_size),
            request.cache_salt,
            request.skip_reading_prefix_cache,
        )
        known = self._requests.get(id(request))
        if known is not None and known[0] is request and known[1] == fields:
            return known[2]
        record = RequestRecord(*fields)
        self._requests[id(request)] = (request, fields, record)
        return record


def _read_since(
    watch: _PoolWatch, seen: _PoolSeen
) -> tuple[tuple[BlockRecord, ...], tuple[int, ...]] | None:
    """The pool's records and free queue from ``seen``'s and the writes since; None if
    the watch's lists started afresh since, or a written block is not at its id's place
    in the pool (then every block is read)."""
    if seen.epoch != watch.epoch:
        return None
    records = seen.records
    written = watch.written[seen.written :]
    if written:
        blocks, sentinels = watch.blocks, (watch.head, watch.queue.fake_free_list_tail)
        updated = list(records)
        for block in dict.fromkeys(written):
            index = block.block_id
            if 0 <= index < len(blocks) and blocks[index] is block:
                updated[index] = block_record(block)
            elif block not in sentinels:
                return None
        records = tuple(updated)
    linked = len(watch.linked) > seen.linked
    return records, _free_queue(watch.queue) if linked else seen.free_queue


def _free_queue(queue: FreeKVCacheBlockQueue) -> tuple[int, ...]:
    return tuple(b.block_id for b in queue.get_all_free_blocks())


def take_snapshot(
    taker: SnapshotTaker,
    scheduler: Scheduler,
    all_requests: Sequence[Request],
    logs: Iterable[logging.LogRecord],
    events: Iterable[KVCacheEvent],
    stats: Stats,
    aux_output_worker: AuxOutputWorkerConnector | None = None,
    engine_dead: bool = False,
) -> Snapshot:
    """The engine's state now; ``taker`` is the run's, and has seen its earlier snapshots."""
    pool = scheduler.kv_cache_manager.block_pool
    aux_output = None
    if scheduler.aux_output_connector is not None and aux_output_worker is not None:
        aux_output = AuxOutputRecord(
            scheduler_generation=scheduler.aux_output_connector.generation,
            worker_generation=aux_output_worker.generation,
            outputs_in_flight=len(aux_output_worker.pending_outputs),
        )
    blocks, free_queue = taker.pool_records(pool)
    return Snapshot(
        blocks=blocks,
        free_queue=free_queue,
        hash_map=taker.hash_map_entries(pool),
        requests=tuple(taker.request_record(r, scheduler) for r in all_requests),
        running=tuple(r.request_id for r in scheduler.running),
        waiting=tuple(r.request_id for r in scheduler.waiting),
        logs=tuple(LogLine(r.levelname, r.name, r.getMessage()) for r in logs),
        events=tuple(event_record(e) for e in events),
        stats=stats,
        usage=round(pool.get_usage(), 4),
        offload=_offload_record(taker, scheduler.connector) if scheduler.connector else None,
        aux_output=aux_output,
        engine_dead=engine_dead,
    )


def _offload_record(taker: SnapshotTaker, connector: SimpleCPUOffloadScheduler) -> OffloadRecord:
    cpu_pool = connector.cpu_block_pool
    cpu_blocks, cpu_free_queue = taker.pool_records(cpu_pool)
    return OffloadRecord(
        cpu_blocks=cpu_blocks,
        cpu_free_queue=cpu_free_queue,
        cpu_hash_map=taker.hash_map_entries(cpu_pool),
        stores_in_flight=tuple(
            StoreRecord(event, transfer.gpu_block_ids, transfer.cpu_block_ids)
            for event, transfer in connector.stores_in_flight().items()
        ),
    )
