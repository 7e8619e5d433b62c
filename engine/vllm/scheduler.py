"""FIFO scheduling, preemption and the prefix-cache reset (vLLM's ``v1/core/sched/scheduler.py``).

What is modelled: first-come-first-served admission with chunked prefill under a
token budget (a waiting request is admitted only when its whole sequence fits,
``scheduler_reserve_full_isl``, plus the ``watermark``), one decoded token per
running request per step, preemption when the pool runs short, finishing, and
``reset_prefix_cache``.
``Scheduler.reset_prefix_cache`` is vLLM 0.33.0's, as released (refuse, or
preempt every running request first): default and preempt modes run it.
``KeepModeScheduler`` is keep mode's proposed change (not in vLLM 0.33.0): its
reset takes ``keep_running_requests`` and builds keep mode's KV-cache manager.
Optional connectors: CPU offload of computed blocks (``engine.vllm.kv_offload``) and
auxiliary outputs (``engine.vllm.aux_output``), the two places a keep reset had to fix.
Not modelled: speculative decoding, encoder inputs, other KV connectors, priorities.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from engine.vllm.aux_output import AuxOutputConnectorMetadata, AuxOutputSchedulerConnector
from engine.vllm.kv_cache_manager import KeepModeKVCacheManager, KVCacheManager
from engine.vllm.kv_cache_utils import HashFunction, get_request_block_hasher, sha256
from engine.vllm.kv_offload import (
    KVConnectorOutput,
    SimpleCPUOffloadMetadata,
    SimpleCPUOffloadScheduler,
)
from engine.vllm.logger import init_logger
from engine.vllm.metrics import PrefixCacheStats
from engine.vllm.request import Request, RequestStatus

logger = init_logger("vllm.v1.core.sched.scheduler")


@dataclass
class SchedulerOutput:
    """What one ``schedule()`` call decided, and what it tells the connectors."""

    num_scheduled_tokens: dict[str, int]
    scheduled_new_req_ids: tuple[str, ...]
    scheduled_resumed_req_ids: tuple[str, ...]
    preempted_req_ids: tuple[str, ...]
    finished_req_ids: frozenset[str] = field(default_factory=frozenset)
    kv_connector_metadata: SimpleCPUOffloadMetadata | None = None
    aux_output_metadata: AuxOutputConnectorMetadata | None = None

    @property
    def total_num_scheduled_tokens(self) -> int:
        return sum(self.num_scheduled_tokens.values())


class Scheduler:
    """Decides, step by step, which requests run and how many tokens each computes."""

    # The manager this scheduler builds (keep mode's scheduler builds keep mode's).
    kv_cache_manager_class: type[KVCacheManager] = KVCacheManager

    def __init__(
        self,
        num_gpu_blocks: int,
        block_size: int,
        # SchedulerConfig's defaults in vLLM 0.33.0 (a server's come from EngineArgs).
        max_num_batched_tokens: int = 2048,
        max_num_seqs: int = 128,
        enable_caching: bool = True,
        enable_kv_cache_events: bool = True,
        log_stats: bool = True,
        hash_function: HashFunction = sha256,
        use_int_block_hashes: bool = True,
        connector: SimpleCPUOffloadScheduler | None = None,
        aux_output_connector: AuxOutputSchedulerConnector | None = None,
        scheduler_reserve_full_isl: bool = True,
        watermark: float = 0.0,
    ) -> None:
        self.block_size = block_size
        self.max_num_scheduled_tokens = max_num_batched_tokens
        self.max_num_running_reqs = max_num_seqs
        self.kv_cache_manager = self.kv_cache_manager_class(
            num_gpu_blocks,
            block_size,
            enable_caching=enable_caching,
            enable_kv_cache_events=enable_kv_cache_events,
            log_stats=log_stats,
            use_int_block_hashes=use_int_block_hashes,
            watermark=watermark,
        )
        # Admit a waiting request only if its whole sequence fits, not just its
        # first chunk: chunked prefill would otherwise over-admit and thrash.
        self.scheduler_reserve_full_isl = scheduler_reserve_full_isl
        # The engine hands this to every Request it builds, so requests hash
        # their own full blocks as tokens arrive.
        self.request_block_hasher = get_request_block_hasher(block_size, hash_function)
        self.requests: dict[str, Request] = {}
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.finished_req_ids: set[str] = set()
        self.prev_step_scheduled_req_ids: set[str] = set()
        self.reset_preempted_req_ids: set[str] = set()
        self.connector = connector
        if connector is not None:
            connector.bind_gpu_block_pool(self.kv_cache_manager.block_pool)
        self.aux_output_connector = aux_output_connector

    def add_request(self, request: Request) -> None:
        self.waiting.append(request)
        self.requests[request.request_id] = request

    def schedule(self) -> SchedulerOutput:
        """One engine step: running requests first, then admit waiting ones in order."""
        token_budget = self.max_num_scheduled_tokens
        num_scheduled_tokens: dict[str, int] = {}
        scheduled_running_reqs: list[Request] = []
        preempted_reqs: list[Request] = []

        req_index = 0
        while req_index < len(self.running) and token_budget > 0:
            request = self.running[req_index]
            num_new_tokens = min(request.num_tokens - request.num_computed_tokens, token_budget)
            if num_new_tokens <= 0:
                req_index += 1
                continue
            while True:
                new_blocks = self.kv_cache_manager.allocate_slots(request, num_new_tokens)
                if new_blocks is not None:
                    break
                # The pool is short: preempt the most recently admitted request.
                preempted_req = self.running.pop()
                if preempted_req in scheduled_running_reqs:
                    scheduled_running_reqs.remove(preempted_req)
                    token_budget += num_scheduled_tokens.pop(preempted_req.request_id)
                self._preempt_request(preempted_req)
                preempted_reqs.append(preempted_req)
                if preempted_req is request:
                    break  # nothing left to preempt but itself
            if new_blocks is None:
                break
            scheduled_running_reqs.append(request)
            num_scheduled_tokens[request.request_id] = num_new_tokens
            token_budget -= num_new_tokens
            req_index += 1

        scheduled_new_reqs: list[Request] = []
        scheduled_resumed_reqs: list[Request] = []
        # A step that had to preempt admits nobody: the pool is already tight.
        if not preempted_reqs:
            while (
                self.waiting and token_budget > 0 and len(self.running) < self.max_num_running_reqs
            ):
                request = self.waiting[0]
                new_computed_blocks, num_new_local_computed_tokens = (
                    self.kv_cache_manager.get_computed_blocks(request)
                )
                num_computed_tokens = num_new_local_computed_tokens
                num_new_tokens = min(request.num_tokens - num_computed_tokens, token_budget)
                new_blocks = self.kv_cache_manager.allocate_slots(
                    request,
                    num_new_tokens,
                    num_new_local_computed_tokens,
                    new_computed_blocks,
                    full_sequence_must_fit=self.scheduler_reserve_full_isl,
                    has_scheduled_reqs=bool(self.running),
                )
                if new_blocks is None:
                    break  # not enough free blocks: it waits, and so does everyone behind it
                self.waiting.popleft()
                self.running.append(request)
                self.kv_cache_manager.record_prefix_cache_stats(request, num_computed_tokens)
                if request.status == RequestStatus.PREEMPTED:
                    scheduled_resumed_reqs.append(request)
                else:
                    scheduled_new_reqs.append(request)
                request.status = RequestStatus.RUNNING
                request.num_computed_tokens = num_computed_tokens
                if request.num_cached_tokens < 0:
                    request.num_cached_tokens = num_computed_tokens
                num_scheduled_tokens[request.request_id] = num_new_tokens
                token_budget -= num_new_tokens

        output = SchedulerOutput(
            num_scheduled_tokens=num_scheduled_tokens,
            scheduled_new_req_ids=tuple(r.request_id for r in scheduled_new_reqs),
            scheduled_resumed_req_ids=tuple(r.request_id for r in scheduled_resumed_reqs),
            preempted_req_ids=tuple(r.request_id for r in preempted_reqs),
            finished_req_ids=frozenset(self.finished_req_ids),
        )
        # The connectors plan their work before the tokens count as computed.
        if self.connector is not None:
            output.kv_connector_metadata = self.connector.build_connector_meta(
                output, self.requests, self.kv_cache_manager.req_to_blocks
            )
        if self.aux_output_connector is not None:
            output.aux_output_metadata = self.aux_output_connector.build_connector_meta(output)
        self._update_after_schedule(output)
        return output

    def _update_after_schedule(self, scheduler_output: SchedulerOutput) -> None:
        # The tokens count as computed as soon as they are scheduled, so the
        # next schedule() can plan the following chunk without waiting.
        for req_id, num_tokens in scheduler_output.num_scheduled_tokens.items():
            self.requests[req_id].num_computed_tokens += num_tokens
        self.finished_req_ids = set()
        self.reset_preempted_req_ids = set()
        self.prev_step_scheduled_req_ids = set(scheduler_output.num_scheduled_tokens)

    def update_from_output(
        self,
        scheduler_output: SchedulerOutput,
        sampled_token_ids: Mapping[str, Sequence[int]],
        kv_connector_output: KVConnectorOutput | None = None,
    ) -> list[str]:
        """Append what the model sampled and finish requests that hit max_tokens;
        then let the offload connector finish the stores the worker completed.

        Returns the ids of the requests that finished.
        """
        finished: list[str] = []
        for req_id in scheduler_output.num_scheduled_tokens:
            request = self.requests.get(req_id)
            if request is None or request.is_finished():
                continue
            new_token_ids = sampled_token_ids.get(req_id, ())
            if not new_token_ids:
                continue  # a prefill chunk that has not reached the last prompt token
            request.append_output_token_ids(new_token_ids)
            if request.num_output_tokens >= request.max_tokens:
                request.status = RequestStatus.FINISHED_LENGTH_CAPPED
                self.running.remove(request)
                self._free_request(request)
                finished.append(req_id)
        if kv_connector_output is not None and self.connector is not None:
            self.connector.update_connector_output(kv_connector_output)
        return finished

    def finish_requests(
        self, request_ids: str | Iterable[str] | None, finished_status: RequestStatus
    ) -> list[Request]:
        """Abort or stop requests from outside, wherever they are (None: all of them).
        Returns the requests it finished (none already finished, no unknown id).

        As in vLLM, the ids go through a set first: several requests finished in
        one call free their blocks in the set's iteration order, not the order given.
        """
        assert RequestStatus.is_finished(finished_status)
        if isinstance(request_ids, str):
            request_ids = (request_ids,)
        elif request_ids is not None:
            request_ids = set(request_ids)
        else:
            request_ids = list(self.requests)
        valid_requests = []
        for req_id in request_ids:
            request = self.requests.get(req_id)
            if request is None or request.is_finished():
                continue
            valid_requests.append(request)
            if request.status == RequestStatus.RUNNING:
                self.running.remove(request)
            else:
                self.waiting.remove(request)
        for request in valid_requests:
            request.status = finished_status
            self._free_request(request)
        return valid_requests

    def _free_request(self, request: Request) -> None:
        assert request.is_finished()
        if self.connector is not None:
            self.connector.request_finished(request)
        self.kv_cache_manager.free(request)
        self.finished_req_ids.add(request.request_id)
        del self.requests[request.request_id]

    def _preempt_request(self, request: Request, drop_stale_output: bool = False) -> None:
        """Free a running request's blocks and send it to the front of the queue.

        Its freed blocks keep their hashes, so unless they are evicted first, its
        re-admission is mostly cache hits. Its id goes into the next
        SchedulerOutput's preempted ids, as vLLM's ``reset_preempted_req_ids`` does
        for every preemption (``drop_stale_output``: vLLM then drops the output in
        flight; with no output in flight here, nothing changes).
        """
        assert request.status == RequestStatus.RUNNING
        self.kv_cache_manager.free(request)
        request.status = RequestStatus.PREEMPTED
        request.num_computed_tokens = 0
        request.num_preemptions += 1
        self.waiting.appendleft(request)
        self.reset_preempted_req_ids.add(request.request_id)

    def reset_prefix_cache(
        self, reset_running_requests: bool = False, reset_connector: bool = False
    ) -> bool:
        """Forget the whole prefix cache.

        - default: refused (returns False) while any request holds blocks;
        - ``reset_running_requests``: preempt every running request first (the
          last admitted first), so every block is free and the reset succeeds;
        - ``reset_connector``: reset the KV connector's own cache too, and count
          its result.

        A successful reset starts a new auxiliary output generation.
        """
        if reset_running_requests:
            while self.running:
                self._preempt_request(self.running.pop(), drop_stale_output=True)
            self.prev_step_scheduled_req_ids.clear()

        reset_successful = self.kv_cache_manager.reset_prefix_cache()
        if reset_running_requests and not reset_successful:
            raise RuntimeError(
                "Failed to reset KV cache even when all the running requests are "
                "preempted and moved to the waiting queue. This is likely due to the "
                "presence of running requests waiting for remote KV transfer, which "
                "is not supported yet."
            )
        if reset_connector:
            reset_successful = self.reset_connector_cache() and reset_successful
        if reset_successful and self.aux_output_connector is not None:
            self.aux_output_connector.reset()
        return reset_successful

    def reset_connector_cache(self) -> bool:
        """Reset the KV connector's cache. With no connector there is nothing to
        reset, which counts as a success."""
        if self.connector is None:
            logger.debug(
                "reset_connector requested but no KV connector is configured; "
                "treating as no-op success."
            )
            return True
        # Not modelled here: vLLM also marks its connector prefix-cache stats reset.
        return self.connector.reset_cache() is not False

    def make_stats(self) -> PrefixCacheStats | None:
        return self.kv_cache_manager.make_prefix_cache_stats()

    def get_num_unfinished_requests(self) -> int:
        return len(self.waiting) + len(self.running)

    def has_unfinished_requests(self) -> bool:
        return self.get_num_unfinished_requests() > 0


class KeepModeScheduler(Scheduler):
    """vLLM 0.33.0's Scheduler with the reset that keep mode needs: the change
    proposed in the write-up, not in vLLM 0.33.0."""

    kv_cache_manager_class = KeepModeKVCacheManager
    kv_cache_manager: KeepModeKVCacheManager

    def reset_prefix_cache(
        self,
        reset_running_requests: bool = False,
        reset_connector: bool = False,
        keep_running_requests: bool = False,
    ) -> bool:
        """Forget the whole prefix cache.

        - default: refused (returns False) while any request holds blocks;
        - ``reset_running_requests``: preempt every running request first (the
          last admitted first), so every block is free and the reset succeeds;
        - ``reset_connector``: reset the KV connector's own cache too, and count
          its result;
        - ``keep_running_requests`` (proposed, not in vLLM 0.33.0): reset anyway;
          running requests keep their blocks and computed tokens, and the
          blocks only lose their hashes.

        A successful reset starts a new auxiliary output generation, except in
        keep mode.
        """
        if reset_running_requests and keep_running_requests:
            raise ValueError("reset_running_requests and keep_running_requests cannot both be True")
        if reset_running_requests:
            while self.running:
                self._preempt_request(self.running.pop(), drop_stale_output=True)
            self.prev_step_scheduled_req_ids.clear()

        reset_successful = self.kv_cache_manager.reset_prefix_cache(
            allow_used_blocks=keep_running_requests
        )
        if reset_running_requests and not reset_successful:
            raise RuntimeError(
                "Failed to reset KV cache even when all the running requests are "
                "preempted and moved to the waiting queue. This is likely due to the "
                "presence of running requests waiting for remote KV transfer, which "
                "is not supported yet."
            )
        if reset_connector:
            reset_successful = self.reset_connector_cache() and reset_successful
        if (
            reset_successful
            and self.aux_output_connector is not None
            and self._should_reset_aux_output(keep_running_requests)
        ):
            self.aux_output_connector.reset()
        return reset_successful

    def _should_reset_aux_output(self, keep_running_requests: bool) -> bool:
        """Whether a successful reset starts a new auxiliary output generation.

        Not in keep mode: running requests may have output in flight, and the
        worker refuses a generation change then. Their earlier outputs stay
        valid anyway, since the weights did not change.
        """
        return not keep_running_requests


class SchedulerWithoutKeepFix(KeepModeScheduler):
    """Keep mode's reset as it was before its aux-output fix: every successful
    reset bumps the auxiliary output generation, keep mode included (as every
    successful reset does in vLLM 0.33.0, where there is no keep mode)."""

    def _should_reset_aux_output(self, keep_running_requests: bool) -> bool:
        return True
