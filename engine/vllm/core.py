"""One engine step: schedule, run the (stand-in) model, apply its output (vLLM's ``EngineCore``).

``EngineCore.reset_prefix_cache`` is vLLM 0.33.0's; ``KeepModeEngineCore`` passes
keep mode's flag on to keep mode's scheduler (proposed, not in vLLM 0.33.0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.vllm.aux_output import AuxOutputWorkerConnector
from engine.vllm.kv_offload import SimpleCPUOffloadWorker
from engine.vllm.logger import init_logger
from engine.vllm.request import Request
from engine.vllm.scheduler import KeepModeScheduler, Scheduler, SchedulerOutput

logger = init_logger("vllm.v1.engine.core")

# Generated token ids start here, far from any prompt token a scenario uses.
FIRST_GENERATED_TOKEN_ID = 50_000


def greedy_token(all_token_ids: Sequence[int]) -> int:
    """The stand-in model's next token: a function of the sequence alone, like greedy
    decoding, so two requests with the same prompt generate the same tokens."""
    return FIRST_GENERATED_TOKEN_ID + len(all_token_ids)


@dataclass(frozen=True)
class EngineCoreStep:
    scheduler_output: SchedulerOutput
    sampled_token_ids: dict[str, list[int]]
    finished_req_ids: tuple[str, ...]


@dataclass(frozen=True)
class UtilityOutput:
    """The answer to a utility call from another process: a result or a failure message."""

    result: Any = None
    failure_message: str | None = None


class EngineCore:
    """Drives a Scheduler with a deterministic stand-in for the model.

    The worker side of the scheduler's connectors lives here too: the CPU
    offload copies and the auxiliary output's asynchronous host copies.
    """

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.offload_worker = SimpleCPUOffloadWorker() if scheduler.connector else None
        self.aux_output_worker = (
            AuxOutputWorkerConnector() if scheduler.aux_output_connector else None
        )

    def add_request(self, request: Request) -> None:
        self.scheduler.add_request(request)

    def execute_model(self, scheduler_output: SchedulerOutput) -> dict[str, list[int]]:
        """Sample one token for every request whose scheduled tokens reach its end."""
        sampled: dict[str, list[int]] = {}
        for req_id in scheduler_output.num_scheduled_tokens:
            request = self.scheduler.requests[req_id]
            if request.num_computed_tokens >= request.num_tokens:
                sampled[req_id] = [greedy_token(request.all_token_ids)]
        return sampled

    def step(self) -> EngineCoreStep:
        scheduler_output = self.scheduler.schedule()
        if self.aux_output_worker is not None:
            assert scheduler_output.aux_output_metadata is not None
            self.aux_output_worker.begin_step(scheduler_output.aux_output_metadata)
        kv_connector_output = None
        if self.offload_worker is not None:
            kv_connector_output = self.offload_worker.get_finished()
            self.offload_worker.start_store(scheduler_output.kv_connector_metadata)
        sampled = self.execute_model(scheduler_output)
        if self.aux_output_worker is not None:
            self._consume_aux_outputs(scheduler_output)
        finished = self.scheduler.update_from_output(scheduler_output, sampled, kv_connector_output)
        return EngineCoreStep(scheduler_output, sampled, tuple(finished))

    def _consume_aux_outputs(self, scheduler_output: SchedulerOutput) -> None:
        """Async scheduling: this step's output stays in flight; the previous
        step's output is consumed now."""
        worker = self.aux_output_worker
        assert worker is not None
        new_output = worker.prepare_output(scheduler_output.num_scheduled_tokens)
        for pending in worker.pending_outputs:
            if pending is not new_output:
                worker.process_output(pending)

    def reset_prefix_cache(
        self, reset_running_requests: bool = False, reset_connector: bool = False
    ) -> bool:
        return self.scheduler.reset_prefix_cache(reset_running_requests, reset_connector)

    def handle_utility_call(self, method_name: str, args: Sequence[Any]) -> UtilityOutput:
        """A call from a client in another process (vLLM's EngineCoreProc).

        Only a message crosses the process boundary: an exception raised here is
        logged and sent back as text, so its type (ValueError or not) is lost.
        The engine core itself carries on.
        """
        try:
            method = getattr(self, method_name)
            return UtilityOutput(result=method(*args))
        except Exception as error:
            logger.exception("Invocation of %s method failed", method_name)
            return UtilityOutput(failure_message=f"Call to {method_name} method failed: {error}")


class KeepModeEngineCore(EngineCore):
    """vLLM 0.33.0's EngineCore with keep mode's flag on its reset: the change
    proposed in the write-up, not in vLLM 0.33.0."""

    scheduler: KeepModeScheduler

    def reset_prefix_cache(
        self,
        reset_running_requests: bool = False,
        reset_connector: bool = False,
        keep_running_requests: bool = False,
    ) -> bool:
        return self.scheduler.reset_prefix_cache(
            reset_running_requests, reset_connector, keep_running_requests
        )
