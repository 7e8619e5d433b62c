"""How much of its ``max_new_tokens`` a running request is expected to still generate
(SGLang 0.5.23's ``managers/scheduler_components/new_token_ratio_tracker.py``).

Admission counts each running request's remaining output times ``current``. With
default server args ``current`` starts at 0.7 (``SGLANG_INIT_NEW_TOKEN_RATIO`` times
``schedule_conservativeness`` 1.0), falls by ``decay`` on every decode step that
retracts nothing, down to ``min`` (0.7 x 0.14 = 0.098, reached after 600 steps), is set
after a retraction to what the requests kept running have generated (plus 20 steps
each) over what they may generate, and goes back to ``init`` when the scheduler is
fully idle (``scheduler.py:5318``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# environ.py:646-649 (each an environment variable there)
SGLANG_INIT_NEW_TOKEN_RATIO = 0.7
SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS = 600
SGLANG_RETRACT_DECODE_STEPS = 20
# server args' schedule_conservativeness default (arg_groups/fields/schedule.py:139-142)
SCHEDULE_CONSERVATIVENESS = 1.0


class DecodingRequest(Protocol):
    output_ids: list[int]
    max_new_tokens: int  # SGLang's sampling_params.max_new_tokens


@dataclass(slots=True, kw_only=True)
class NewTokenRatioTracker:
    init: float
    min: float
    decay: float
    current: float

    @classmethod
    def from_config(cls) -> NewTokenRatioTracker:
        """new_token_ratio_tracker.py:19-30."""
        init = min(SGLANG_INIT_NEW_TOKEN_RATIO * SCHEDULE_CONSERVATIVENESS, 1.0)
        min_ratio = min(init * SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
        decay = (init - min_ratio) / SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS
        return cls(init=init, min=min_ratio, decay=decay, current=init)

    def decay_step(self) -> None:
        self.current = max(self.current - self.decay, self.min)

    def reset(self) -> None:
        self.current = self.init

    @staticmethod
    def estimate_new_token_ratio_after_retract(reqs: Sequence[DecodingRequest]) -> float:
        """new_token_ratio_tracker.py:38-48: over the requests kept running."""
        total_decoded_tokens = sum(len(r.output_ids) for r in reqs)
        total_max_new_tokens = sum(r.max_new_tokens for r in reqs)
        new_estimate_ratio = (total_decoded_tokens + SGLANG_RETRACT_DECODE_STEPS * len(reqs)) / (
            total_max_new_tokens + 1  # avoid zero division
        )
        return min(1.0, new_estimate_ratio)
