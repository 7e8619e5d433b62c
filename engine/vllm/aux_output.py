"""Auxiliary model outputs (vLLM's ``distributed/aux_output_connector``), reduced to
the part a prefix-cache reset touches: the output generation.

Auxiliary outputs (such as routed-expert rows) are stored per block hash, so a
prefix-cache reset starts a new namespace: the scheduler side bumps a generation
counter, sends it with every step's metadata, and the worker side drops its
per-request state when it sees the generation change.

The worker copies each step's output to the host asynchronously. With async
scheduling the engine schedules the next step before it consumes the previous
step's output, so one step's output is normally in flight when a new step
begins. The worker asserts that nothing is in flight when the generation
changes: a reset was assumed to happen only once all output was consumed. A
keep reset breaks that assumption, so keep mode skips the aux reset (see
``KeepModeScheduler._should_reset_aux_output``).

In this simulator tokens still flow synchronously; only the auxiliary output's
host copy is asynchronous, consumed one engine step late.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.vllm.scheduler import SchedulerOutput


@dataclass(frozen=True)
class AuxOutputConnectorMetadata:
    generation: int
    requests: tuple[str, ...]  # scheduled this step


@dataclass(frozen=True)
class PendingAuxOutput:
    """One step's output, copied to the host asynchronously, not yet consumed."""

    step: int
    request_ids: tuple[str, ...]


class AuxOutputSchedulerConnector:
    """Scheduler side: the current output generation, sent with every step."""

    def __init__(self) -> None:
        self._generation = 0

    @property
    def generation(self) -> int:
        return self._generation

    def build_connector_meta(self, scheduler_output: SchedulerOutput) -> AuxOutputConnectorMetadata:
        return AuxOutputConnectorMetadata(
            self._generation, tuple(scheduler_output.num_scheduled_tokens)
        )

    def reset(self) -> None:
        """Start a new output namespace after a prefix-cache reset."""
        self._generation += 1


class AuxOutputWorkerConnector:
    """Worker side: the outputs in flight and the generation it last saw."""

    def __init__(self) -> None:
        self._generation = 0
        self._requests: set[str] = set()
        self._pending_outputs: list[PendingAuxOutput] = []
        self._num_steps = 0

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def pending_outputs(self) -> tuple[PendingAuxOutput, ...]:
        return tuple(self._pending_outputs)

    def begin_step(self, metadata: AuxOutputConnectorMetadata) -> None:
        """Apply one step's metadata before the model runs."""
        assert metadata.generation >= self._generation, (
            "auxiliary output metadata generation moved backwards"
        )
        if metadata.generation > self._generation:
            # A generation change follows a prefix-cache reset, which the
            # scheduler only performs once all model output is consumed.
            assert not self._pending_outputs, (
                "auxiliary output generation changed with output in flight"
            )
            self._requests.clear()
            self._generation = metadata.generation
        self._requests.update(metadata.requests)

    def prepare_output(self, request_ids: Iterable[str]) -> PendingAuxOutput | None:
        """Start the host copy of this step's output; it is consumed later."""
        self._num_steps += 1
        ids = tuple(request_ids)
        if not ids:
            return None
        pending = PendingAuxOutput(self._num_steps, ids)
        self._pending_outputs.append(pending)
        return pending

    def process_output(self, pending: PendingAuxOutput) -> None:
        """The engine consumed this step's output."""
        self._pending_outputs.remove(pending)
