"""A fleet run's figures: the fleet's hit rate, each replica's, the stale routes, and a
series over time (in order: per window of requests; with time: per engine step)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The columns of a fleet run's CSV line (``FleetRun.row``).
ROW_COLUMNS = (
    "engine",
    "mode",
    "router",
    "replicas",
    "capacity_tokens",
    "block_size",
    "requests",
    "prompt_tokens",
    "hits",
    "hit_rate",
    "skipped_requests",
    "believed_routes",
    "stale_routes",
    "max_replica_share",
    "completed",
    "seconds",
)


@dataclass
class ReplicaFigures:
    requests: int = 0
    prompt_tokens: int = 0
    hits: int = 0
    skipped_requests: int = 0
    evicted_tokens: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hits / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "hit_rate": self.hit_rate}


@dataclass
class FleetRun:
    """A fleet run (complete, or stopped: ``completed`` False)."""

    engine: str
    mode: str  # "in-order" or "timed"
    router: str
    replicas: int
    capacity_tokens: int  # each replica's
    block_size: int  # vLLM's block size, SGLang's page size
    per_replica: list[ReplicaFigures]
    believed_routes: int = 0  # the router believed the chosen replica held some of the prompt
    stale_routes: int = 0  # ... more of it than the replica found: evicted behind its back
    left_out: int = 0  # with time: requests that could never be admitted, never routed
    completed: bool = True
    seconds: float = 0.0
    # x: the requests routed so far (in order) or the step's time in ms (with time); load:
    # per replica, the load the router sees: its routes among its last ``load_window`` (in
    # order) or waiting + running after the step (with time)
    series: dict[str, Any] = field(default_factory=dict)
    # the replica each request was routed to, in the order routed (a request's index in
    # the trace or workload); in order, the requests a replica skipped (never fit its pool)
    routes: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.per_replica)

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.per_replica)

    @property
    def hits(self) -> int:
        return sum(r.hits for r in self.per_replica)

    @property
    def hit_rate(self) -> float:
        return self.hits / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def max_replica_share(self) -> float:
        """The busiest replica's share of the requests (1/N is even)."""
        total = self.requests
        return max(r.requests for r in self.per_replica) / total if total else 0.0

    def row(self) -> dict[str, Any]:
        skipped = sum(r.skipped_requests for r in self.per_replica) + self.left_out
        return {
            name: skipped if name == "skipped_requests" else getattr(self, name)
            for name in ROW_COLUMNS
        }

    def csv_line(self) -> str:
        row = self.row()
        return ",".join(
            f"{row[c]:.6g}" if isinstance(row[c], float) else str(row[c]) for c in ROW_COLUMNS
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.row(),
            "per_replica": [r.to_dict() for r in self.per_replica],
            "series": self.series,
        }
