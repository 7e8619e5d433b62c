"""One engine step: schedule, run the (stand-in) model, apply its output (vLLM's ``EngineCore``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.request import Request
from engine.scheduler import Scheduler, SchedulerOutput

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


class EngineCore:
    """Drives a Scheduler with a deterministic stand-in for the model."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

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
        sampled = self.execute_model(scheduler_output)
        finished = self.scheduler.update_from_output(scheduler_output, sampled)
        return EngineCoreStep(scheduler_output, sampled, tuple(finished))

    def reset_prefix_cache(
        self, reset_running_requests: bool = False, keep_running_requests: bool = False
    ) -> bool:
        return self.scheduler.reset_prefix_cache(reset_running_requests, keep_running_requests)
