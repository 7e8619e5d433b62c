"""A fleet run's knobs, checked: every knob that cannot be used, with the reason."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.lab.fleet.routers import DEFAULT_LOAD_WEIGHT, ROUTER_NAMES
from engine.lab.traces.timed import DEFAULT_STEP_MS, default_unit
from engine.lab.workload.workload import WorkloadError

MAX_REPLICAS = 16
LOAD_WINDOW_PER_REPLICA = 4
ENGINES = ("vllm", "sglang")


@dataclass(frozen=True)
class FleetKnobs:
    """``capacity_tokens`` is each replica's pool (a workload's own ``num_gpu_blocks`` x
        ``block_size`` when None); ``block_size`` None is the engine's default (the trace's 512
        on vLLM, SGLang's page size 1); ``event_delay`` holds each replica's KV events back
        from the router for that many requests (in order) or engine steps (with time), as
        events cross a network; ``step_ms`` is the timed replay's clock; ``load_window`` is the
    in-order replay's load (engine/lab/fleet/in_order.py)."""

    replicas: int = 4
    router: str = "round-robin"
    engine: str = "vllm"
    capacity_tokens: int | None = None
    block_size: int | None = None
    load_weight: float = DEFAULT_LOAD_WEIGHT
    event_delay: int = 0
    step_ms: float = DEFAULT_STEP_MS
    load_window: int | None = None

    @property
    def window(self) -> int:
        """In order, the routes a request counts as its replica's load for (default:
        ``LOAD_WINDOW_PER_REPLICA`` per replica)."""
        return self.load_window or LOAD_WINDOW_PER_REPLICA * self.replicas

    @property
    def unit(self) -> int:
        return self.block_size or default_unit(self.engine)

    def problems(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if not 1 <= self.replicas <= MAX_REPLICAS:
            found["replicas"] = (
                f"replicas must be between 1 and {MAX_REPLICAS}, not {self.replicas}"
            )
        if self.router not in ROUTER_NAMES:
            found["router"] = (
                f"router must be one of {', '.join(ROUTER_NAMES)}, not {self.router!r}"
            )
        if self.engine not in ENGINES:
            found["engine"] = f"engine must be one of {', '.join(ENGINES)}, not {self.engine!r}"
        if not (math.isfinite(self.load_weight) and self.load_weight >= 0):
            found["load_weight"] = f"load_weight must be a number >= 0, not {self.load_weight}"
        if self.event_delay < 0:
            found["event_delay"] = f"event_delay must be 0 or more, not {self.event_delay}"
        if self.load_window is not None and self.load_window < 1:
            found["load_window"] = f"load_window must be 1 or more, not {self.load_window}"
        if not (math.isfinite(self.step_ms) and self.step_ms > 0):
            found["step_ms"] = f"step_ms must be a positive number of ms, not {self.step_ms}"
        if self.block_size is not None and self.block_size < 1:
            found["block_size"] = f"block_size must be 1 or more, not {self.block_size}"
        capacity = self.capacity_tokens
        if capacity is not None and "block_size" not in found and capacity < self.unit:
            found["capacity_tokens"] = (
                f"a capacity of {capacity:,} tokens holds no {self.unit}-token block"
            )
        return found

    def check(self) -> None:
        """Raise WorkloadError for the first knob that cannot be used."""
        for knob, message in self.problems().items():
            raise WorkloadError(knob, message)
