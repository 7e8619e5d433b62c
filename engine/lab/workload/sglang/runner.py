"""A workload played on SGLang 0.5.23's model (engine/sglang/), measured like vLLM's.

The same knobs give the same requests as on vLLM (token ids, arrivals, output
lengths, the prepended token); ``cache_salt`` becomes the request's ``extra_key``,
the tree's namespace, so two salts never share a node (SGLang 0.5.23's ``RadixKey``
namespaces by ``(extra_key, cache_salt)``; with no other ``extra_key`` that splits
the tree exactly as ``extra_key = salt`` does). The pool holds
``num_gpu_blocks * block_size`` KV slots at SGLang's default page size 1 (see
docs/sglang.md, "Workloads on SGLang"), the tree uses SGLang's defaults (lru
eviction, fcfs scheduling).

Columns without a meaning here are left empty (None): SGLang retracts requests
rather than preempting them (``Scheduler.retract_decode``: their KV freed, not
cached) and the runner does not count retractions, so the preemption columns are
empty; pool usage and evictions count KV slots (tokens), not blocks.
``max_num_batched_tokens`` and ``reset_mode`` are not used. The lab drives the
model through its public calls; engine/sglang knows nothing of the lab.
"""

from __future__ import annotations

from typing import Any

from engine.lab.workload.run import COLUMNS, PROGRESS_EVERY_STEPS, SteppedRun, WorkloadRun, _ratio
from engine.lab.workload.workload import Workload, validate
from engine.sglang.allocator import make_allocator
from engine.sglang.radix_cache import RadixCache
from engine.sglang.scheduler import Req, Scheduler

# SGLang's defaults (docs/sglang.md, "Defaults taken from the source").
SGLANG_PAGE_SIZE = 1
SGLANG_SCHEDULE_POLICY = "fcfs"

# Columns with no meaning on SGLang's modelled scheduler: always None.
NO_MEANING_ON_SGLANG = (
    "preempted_queries",
    "preempted_hits",
    "preemptions",
    "cumulative_preemptions",
    "survival_fraction",
)


def extra_key(workload: Workload, index: int) -> str | None:
    """Request ``index``'s namespace in the tree: its ``cache_salt``."""
    return workload.cache_salt(index)


def pool_slots(workload: Workload) -> int:
    """The SGLang pool's size in KV slots: the tokens vLLM's pool has room for."""
    return workload.num_gpu_blocks * workload.block_size


class SGLangWorkloadRunner(SteppedRun[Req]):
    """Plays a workload on SGLang's Scheduler and RadixCache, one row per step.

    The same base as ``WorkloadRunner`` (``advance``, ``done``, ``step``, ``result``),
    so a caller can show progress or stop it the same way."""

    engine_name = "sglang"

    def __init__(
        self, workload: Workload, slots: int | None = None, page_size: int = SGLANG_PAGE_SIZE
    ) -> None:
        """``slots``: the pool's KV slots (default ``pool_slots(workload)``); a runner
        that makes its own requests (engine/lab/traces/timed.py) sizes its own."""
        self._validate(workload)
        self.workload = workload
        self.allocator = make_allocator(slots or pool_slots(workload), page_size)
        self.tree_cache = RadixCache(self.allocator, page_size=page_size)
        self.scheduler = Scheduler(self.allocator, self.tree_cache, SGLANG_SCHEDULE_POLICY)
        self.series = {column: [] for column in COLUMNS}
        self.requests = []
        self._prepared: list[Req] = []  # built ahead of arrival (see prepare)
        self.request_hits: dict[str, int] = {}  # rid -> hit tokens at admission
        self._admitted: list[tuple[int, int]] = []  # (queried, hit) tokens this step
        self._evicted = 0
        self._totals = {"queries": 0, "hits": 0}
        self._wrap_model()

    def _validate(self, workload: Workload) -> None:
        validate(workload)

    def _wrap_model(self) -> None:
        """Count admissions and evicted slots by wrapping the model objects' own calls
        (the model itself stays untouched)."""
        schedule, evict = self.scheduler.schedule, self.tree_cache.evict

        def recording_schedule() -> list[Req]:
            admitted = schedule()
            # the hit as admitted (a checkpoint after the prefill moves prefix_len)
            self._admitted.extend((len(req.origin_input_ids), req.prefix_len) for req in admitted)
            self.request_hits.update((req.rid, req.prefix_len) for req in admitted)
            return admitted

        def counting_evict(num_tokens: int) -> int:
            evicted = evict(num_tokens)
            self._evicted += evicted
            return evicted

        self.scheduler.schedule = recording_schedule  # type: ignore[method-assign]
        self.tree_cache.evict = counting_evict  # type: ignore[method-assign]

    @property
    def num_finished(self) -> int:
        return len(self.scheduler.finished)

    def _has_unfinished_requests(self) -> bool:
        return bool(self.scheduler.waiting_queue or self.scheduler.running)

    def _make_request(self, index: int) -> Req:
        workload = self.workload
        return Req(
            f"req-{index}",
            workload.prompt(index),
            max_new_tokens=workload.output_tokens,
            extra_key=extra_key(workload, index),
        )

    def release(self) -> None:
        """As WorkloadRunner's, for a caller that plays either. Nothing is unlinked: the
        tree's nodes (parent and children refer to each other) go at the collector's next
        pass, a node per shared segment, not an object per block as vLLM's pool."""

    def _add_request(self, req: Req) -> None:
        self.scheduler.add_request(req)
        self.requests.append(req)

    def _arrive(self) -> None:
        for req in self._arriving():
            self._add_request(req)

    def _reset(self) -> int:
        """SGLang's ``flush_cache`` (scheduler.py:5518-5545, ``is_fully_idle``): only
        with no request waiting or running, else refused; then the tree and the pool
        start empty. A workload's arrivals come first, so in a run it is refused."""
        if self.scheduler.waiting_queue or self.scheduler.running:
            return 0
        self.tree_cache.reset()
        self.allocator.clear()
        return 1

    def _run_one_step(self) -> None:
        step = self.step + 1
        self._arrive()
        reset = self._reset() if step == self.workload.reset_step else None
        self.scheduler.step()
        admitted, self._admitted = self._admitted, []
        evictions, self._evicted = self._evicted, 0
        queries = sum(queried for queried, _ in admitted)
        hits = sum(hit for _, hit in admitted)
        totals = self._totals
        totals["queries"] += queries
        totals["hits"] += hits
        free = self.allocator.available_size()
        evictable = self.tree_cache.evictable_size()
        row: dict[str, Any] = {
            "step": step,
            "arrived": len(self.requests),
            "running": len(self.scheduler.running),
            "waiting": len(self.scheduler.waiting_queue),
            "finished": self.num_finished,
            "queries": queries,
            "hits": hits,
            "hit_rate": _ratio(hits, queries),
            "cumulative_queries": totals["queries"],
            "cumulative_hits": totals["hits"],
            "cumulative_hit_rate": _ratio(totals["hits"], totals["queries"]),
            **dict.fromkeys(NO_MEANING_ON_SGLANG),
            # in KV slots: held by requests (their own and locked tree slots), in the
            # tree unlocked (evictable, can be hit), free
            "held_blocks": self.allocator.size - free - evictable,
            "free_cached_blocks": evictable,
            "free_empty_blocks": free,
            "evictions": evictions,
            "prefill_tokens": queries - hits,
            "prefill_tokens_without_cache": queries,
            "cumulative_prefill_tokens": totals["queries"] - totals["hits"],
            "cumulative_prefill_tokens_without_cache": totals["queries"],
            "reset": reset,
        }
        for column, value in row.items():
            self.series[column].append(value)

    def _request_hits(self) -> list[int]:
        # a request not admitted yet counts 0, as on vLLM
        return [self.request_hits.get(req.rid, 0) for req in self.requests]


def run_sglang_workload(workload: Workload) -> WorkloadRun:
    """Play the workload on SGLang to its end."""
    runner = SGLangWorkloadRunner(workload)
    while not runner.done:
        runner.advance(PROGRESS_EVERY_STEPS)
    return runner.result()
