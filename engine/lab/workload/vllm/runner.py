"""The workload lab's runner on vLLM's model: the same ``Scheduler`` and ``EngineCore``
the timelines use, untraced, through the engine's public calls, one row per step."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from engine.lab.play.scenario import DEFAULT_MAX_NUM_SEQS, Action, reset_flags
from engine.lab.play.vllm.variants import engine_core, reset_prefix_cache, scheduler_class
from engine.lab.workload.prompt_hashes import PROMPT_HASHES, PromptHashStore
from engine.lab.workload.run import COLUMNS, PROGRESS_EVERY_STEPS, SteppedRun, WorkloadRun, _ratio
from engine.lab.workload.workload import Workload, validate
from engine.vllm.kv_cache_utils import KVCacheBlock
from engine.vllm.request import Request
from engine.vllm.scheduler import Scheduler


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
        requests, engine/lab/traces/replay.py, checks its own limits)."""
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
