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
rather than preempting them (``Scheduler.retract_decode``: the prompt, inserted
after prefill, stays in the tree; the outputs' KV is freed, not cached) and the
runner does not count retractions, so the preemption columns are empty; pool usage
and evictions count KV slots (tokens), not blocks.
``max_num_batched_tokens`` and ``reset_mode`` are not used. The lab drives the
model through its public calls; engine/sglang knows nothing of the lab.
"""

from __future__ import annotations

from engine.lab.workload.run import PROGRESS_EVERY_STEPS, StepCounts, SteppedRun, WorkloadRun
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


def pool_slots(workload: Workload) -> int:
    """The SGLang pool's size in KV slots: the tokens vLLM's pool has room for."""
    return workload.num_gpu_blocks * workload.block_size


class SGLangWorkloadRunner(SteppedRun[Req]):
    """Plays a workload on SGLang's Scheduler and RadixCache, one row per step.

    The same base as ``WorkloadRunner`` (``advance``, ``done``, ``step``, ``result``),
    so a caller can show progress or stop it the same way."""

    engine_name = "sglang"

    def __init__(
        self,
        workload: Workload,
        slots: int | None = None,
        page_size: int = SGLANG_PAGE_SIZE,
        enable_kv_cache_events: bool = False,
    ) -> None:
        """``slots``: the pool's KV slots (default ``pool_slots(workload)``); a runner
        that makes its own requests (engine/lab/traces/timed.py) sizes its own;
        ``enable_kv_cache_events``: the tree queues SGLang's KV events (a fleet's replica)."""
        self._validate(workload)
        self._start(workload)
        self.allocator = make_allocator(slots or pool_slots(workload), page_size)
        self.tree_cache = RadixCache(
            self.allocator, page_size=page_size, enable_kv_cache_events=enable_kv_cache_events
        )
        self.scheduler = Scheduler(self.allocator, self.tree_cache, SGLANG_SCHEDULE_POLICY)
        self.request_hits: dict[str, int] = {}  # rid -> hit tokens at admission
        self._admitted: list[tuple[int, int]] = []  # (queried, hit) tokens this step
        self._evicted = 0
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

    def _new_request(
        self, request_id: str, prompt: list[int], output_tokens: int, salt: str | None
    ) -> Req:
        """The salt is the request's namespace in the tree, its ``extra_key``."""
        return Req(request_id, prompt, max_new_tokens=output_tokens, extra_key=salt)

    def release(self) -> None:
        """As WorkloadRunner's, for a caller that plays either. Nothing is unlinked: the
        tree's nodes (parent and children refer to each other) go at the collector's next
        pass, a node per shared segment, not an object per block as vLLM's pool."""

    def _add_request(self, req: Req) -> None:
        self.scheduler.add_request(req)
        self.requests.append(req)

    def _reset(self) -> int:
        """SGLang's ``flush_cache`` (``Scheduler.flush_cache``): only when fully idle,
        else refused; then the tree and the pool start empty. A workload's arrivals
        come first, so in a run it is refused."""
        return int(self.scheduler.flush_cache())

    def _engine_step(self, reset_asked: bool) -> StepCounts:
        self.scheduler.step()
        admitted, self._admitted = self._admitted, []
        evictions, self._evicted = self._evicted, 0
        free = self.allocator.available_size()
        evictable = self.tree_cache.evictable_size()
        return StepCounts(
            running=len(self.scheduler.running),
            waiting=len(self.scheduler.waiting_queue),
            finished=self.num_finished,
            queries=sum(queried for queried, _ in admitted),
            hits=sum(hit for _, hit in admitted),
            **dict.fromkeys(("preempted_queries", "preempted_hits", "preemptions")),
            # in KV slots: held by requests (their own and locked tree slots), in the
            # tree unlocked (evictable, can be hit), free
            held=self.allocator.size - free - evictable,
            free_cached=evictable,
            free_empty=free,
            evictions=evictions,
        )

    def _request_hits(self) -> list[int]:
        # a request not admitted yet counts 0, as on vLLM
        return [self.request_hits.get(req.rid, 0) for req in self.requests]


def run_sglang_workload(workload: Workload) -> WorkloadRun:
    """Play the workload on SGLang to its end."""
    runner = SGLangWorkloadRunner(workload)
    while not runner.done:
        runner.advance(PROGRESS_EVERY_STEPS)
    return runner.result()
