"""CPU offload of GPU blocks (vLLM's ``v1/simple_kv_offload``), reduced to its store path.

The scheduler side (``SimpleCPUOffloadScheduler``) plans, at every ``schedule()``,
a copy to CPU of each running request's blocks whose KV is confirmed computed
and that have a hash. Starting a store takes two references until it completes:

- a ref on each GPU block being copied (``touch``: ref_cnt + 1), so the block is
  not handed out while the copy reads it;
- a new CPU block for each (ref_cnt 1 in the CPU pool).

The worker side (``SimpleCPUOffloadWorker``) reports a store as finished at the
next engine step. The scheduler then runs ``_process_store_completion``: it
registers each CPU copy under its GPU block's primary hash, so the load path can
find it, and drops both references.

A keep reset clears the hash of every GPU block, held ones included. A store in
flight across such a reset finds its GPU blocks still allocated (it holds a ref)
but without a hash. The code before the keep-mode fix asserted the hash was
there, which took the engine core down
(``SimpleCPUOffloadSchedulerWithoutFix``); the fixed code registers nothing
for such a block and still releases both references.

Not modelled: loads from CPU, lazy mode, several KV-cache groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine.vllm.block_pool import BlockPool
from engine.vllm.kv_cache_utils import KVCacheBlock
from engine.vllm.logger import init_logger

if TYPE_CHECKING:
    from engine.vllm.request import Request
    from engine.vllm.scheduler import SchedulerOutput

logger = init_logger("vllm.v1.simple_kv_offload.manager")


@dataclass(frozen=True)
class TransferMeta:
    """One store: GPU block i is copied into CPU block i."""

    gpu_block_ids: tuple[int, ...]
    cpu_block_ids: tuple[int, ...]


@dataclass(frozen=True)
class SimpleCPUOffloadMetadata:
    """What the scheduler tells the worker for one step: the store to start, if any."""

    store_event: int = -1
    store_gpu_blocks: tuple[int, ...] = ()
    store_cpu_blocks: tuple[int, ...] = ()


@dataclass
class KVConnectorOutput:
    """What the worker reports back with a step's model output."""

    finished_sending: list[int] = field(default_factory=list)  # store events done


class SimpleCPUOffloadScheduler:
    """Scheduler side: plans stores, and finishes them when the worker reports back."""

    def __init__(self, num_cpu_blocks: int, block_size: int) -> None:
        self.block_size = block_size
        # The CPU copies live in a pool of their own, with its own hash map.
        self.cpu_block_pool = BlockPool(
            num_cpu_blocks, enable_caching=True, hash_block_size=block_size
        )
        self._gpu_block_pool: BlockPool | None = None
        self._store_event_counter = 0
        self._store_event_to_blocks: dict[int, TransferMeta] = {}
        # How many leading blocks of each request are stored (or being stored).
        self._num_stored_blocks: dict[str, int] = {}

    def bind_gpu_block_pool(self, gpu_block_pool: BlockPool) -> None:
        """Called by the Scheduler once its KV-cache manager exists."""
        self._gpu_block_pool = gpu_block_pool

    def build_connector_meta(
        self,
        scheduler_output: SchedulerOutput,
        requests: Mapping[str, Request],
        block_ids: Mapping[str, Sequence[KVCacheBlock]],
    ) -> SimpleCPUOffloadMetadata:
        """Start one store covering every scheduled request's newly confirmed blocks."""
        for req_id in scheduler_output.scheduled_resumed_req_ids:
            self._num_stored_blocks.pop(req_id, None)  # recomputed from zero
        gpu_pool = self._gpu_block_pool
        assert gpu_pool is not None
        store_blocks: list[KVCacheBlock] = []
        num_stores_by_req: dict[str, int] = {}
        num_free = self.cpu_block_pool.get_num_free_blocks()
        for req_id in scheduler_output.num_scheduled_tokens:
            num_before = len(store_blocks)
            # Only KV the GPU has already computed, i.e. before this step's tokens.
            confirmed_tokens = requests[req_id].num_computed_tokens
            ready_blocks = confirmed_tokens // self.block_size
            already_stored = self._num_stored_blocks.get(req_id, 0)
            for block in block_ids[req_id][already_stored:ready_blocks]:
                if block.block_hash is None or num_free <= len(store_blocks):
                    break
                cpu_map = self.cpu_block_pool.cached_block_hash_to_block
                if cpu_map.get_one_block(block.block_hash) is not None:
                    already_stored += 1  # already on the CPU
                    continue
                store_blocks.append(block)
                already_stored += 1
            self._num_stored_blocks[req_id] = already_stored
            if len(store_blocks) > num_before:
                num_stores_by_req[req_id] = len(store_blocks) - num_before
        if not store_blocks:
            return SimpleCPUOffloadMetadata()

        cpu_blocks = self.cpu_block_pool.get_new_blocks(len(store_blocks))
        # Hold the GPU blocks while the copy reads them.
        gpu_pool.touch(store_blocks)
        store_event = self._store_event_counter
        self._store_event_counter += 1
        transfer = TransferMeta(
            tuple(block.block_id for block in store_blocks),
            tuple(block.block_id for block in cpu_blocks),
        )
        self._store_event_to_blocks[store_event] = transfer
        for req_id, num_blocks in num_stores_by_req.items():
            logger.debug(
                "Request %s: Scheduling store of %d blocks to CPU (%d groups)",
                req_id,
                num_blocks,
                1,  # one KV-cache group
            )
        return SimpleCPUOffloadMetadata(store_event, transfer.gpu_block_ids, transfer.cpu_block_ids)

    def update_connector_output(self, connector_output: KVConnectorOutput) -> None:
        """Finish the stores the worker reports as copied."""
        for store_event in connector_output.finished_sending:
            transfer = self._store_event_to_blocks.pop(store_event)
            self._process_store_completion(
                list(transfer.gpu_block_ids), list(transfer.cpu_block_ids)
            )
            logger.debug(
                "Store event %d completed: cached %d blocks to CPU",
                store_event,
                len(transfer.cpu_block_ids),
            )

    def _process_store_completion(self, gpu_block_ids: list[int], cpu_block_ids: list[int]) -> int:
        """Register each CPU copy under its GPU block's hash; release both refs.

        A keep reset may have cleared a held GPU block's hash while its copy was
        in flight. Then the copy is of no use as a cache entry (nobody could
        find it under the old hash, and there is no new one), so it is not
        registered; the refs are released all the same. Returns how many
        copies were registered.
        """
        assert self._gpu_block_pool is not None
        gpu_blocks = [self._gpu_block_pool.blocks[bid] for bid in gpu_block_ids]
        cpu_blocks = [self.cpu_block_pool.blocks[bid] for bid in cpu_block_ids]
        num_cached = 0
        for gpu_block, cpu_block in zip(gpu_blocks, cpu_blocks, strict=True):
            primary_hash = gpu_block.block_hash
            if primary_hash is None:
                continue  # reset by a keep reset while the copy was in flight
            cpu_block.set_block_hash(primary_hash)
            self.cpu_block_pool.cached_block_hash_to_block.insert(primary_hash, cpu_block)
            num_cached += 1
        # Drop the store's refs: the CPU block becomes a cached (or empty) free
        # block, the GPU block is back to its holders' count.
        self.cpu_block_pool.free_blocks(cpu_blocks)
        self._gpu_block_pool.free_blocks(gpu_blocks)
        return num_cached

    def request_finished(self, request: Request) -> None:
        """Forget the request; stores in flight keep their blocks until they complete."""
        self._num_stored_blocks.pop(request.request_id, None)

    def reset_cache(self) -> bool | None:
        """The connector's part of ``reset_prefix_cache(reset_connector=True)``.

        Not modelled: vLLM abandons the transfers in flight and resets the CPU cache.
        """
        raise NotImplementedError("resetting the CPU offload cache is not modelled")

    def stores_in_flight(self) -> dict[int, TransferMeta]:
        return dict(self._store_event_to_blocks)


class SimpleCPUOffloadSchedulerWithoutFix(SimpleCPUOffloadScheduler):
    """The store completion as it was before keep mode: it assumes a GPU block
    held by a store always keeps its hash."""

    def _process_store_completion(self, gpu_block_ids: list[int], cpu_block_ids: list[int]) -> int:
        assert self._gpu_block_pool is not None
        gpu_blocks = [self._gpu_block_pool.blocks[bid] for bid in gpu_block_ids]
        cpu_blocks = [self.cpu_block_pool.blocks[bid] for bid in cpu_block_ids]
        for gpu_block, cpu_block in zip(gpu_blocks, cpu_blocks, strict=True):
            primary_hash = gpu_block.block_hash
            assert primary_hash is not None
            cpu_block.set_block_hash(primary_hash)
            self.cpu_block_pool.cached_block_hash_to_block.insert(primary_hash, cpu_block)
        self.cpu_block_pool.free_blocks(cpu_blocks)
        self._gpu_block_pool.free_blocks(gpu_blocks)
        return len(cpu_blocks)


class SimpleCPUOffloadWorker:
    """Worker side: runs the copies. A store started at one step is reported
    finished at the next, so it is in flight across anything that happens
    between two steps (such as a prefix-cache reset)."""

    def __init__(self) -> None:
        self._stores_in_flight: list[int] = []

    def get_finished(self) -> KVConnectorOutput:
        """The stores started at earlier steps: their copies are done."""
        finished, self._stores_in_flight = self._stores_in_flight, []
        return KVConnectorOutput(finished_sending=finished)

    def start_store(self, metadata: SimpleCPUOffloadMetadata | None) -> None:
        if metadata is not None and metadata.store_event >= 0:
            self._stores_in_flight.append(metadata.store_event)
