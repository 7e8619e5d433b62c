"""The routers, each as its system defines it (docs/fleet.md gives the sources):

- ``round-robin``: replica i mod N, whatever it holds or carries;
- ``least-loaded``: the replica with the fewest requests waiting plus running;
- ``prefix-aware``: llm-d's precise prefix-cache scorer and Dynamo's KV router: a block
  hash index per replica fed only by the replicas' KV events (``KVEventIndex``), each
  replica scored by the blocks of the prompt it holds from the first, less ``load_weight``
  times its load;
- ``cache-aware``: SGLang's router (sgl-router's ``cache_aware`` policy): when the loads
  are imbalanced (max - min > ``balance_abs_threshold`` and max > ``balance_rel_threshold``
  x min) the least loaded; else the worker whose approximate tree matches most of the
  prompt if the match is more than ``cache_threshold`` of it, else the worker with the
  smallest tree; the chosen worker's tree takes the prompt.

A tie goes to the first tied replica after the one chosen last (so with nothing to tell
replicas apart every router spreads requests as round-robin does). ``choose`` returns
the replica and how many prompt tokens the router believed it holds (None: no belief),
which the fleet compares with what the replica found (a stale route).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from engine.lab.fleet.approx_tree import ApproxTree
from engine.lab.fleet.kv_index import KVEventIndex
from engine.lab.fleet.requests import RouteRequest

# sgl-router's defaults for the cache-aware policy (its CLI's and config's defaults).
SGLANG_CACHE_THRESHOLD = 0.3
SGLANG_BALANCE_ABS_THRESHOLD = 64
SGLANG_BALANCE_REL_THRESHOLD = 1.5
SGLANG_EVICTION_INTERVAL_S = 120
SGLANG_MAX_TREE_SIZE = 67_108_864
DEFAULT_LOAD_WEIGHT = 1.0


@dataclass(frozen=True)
class Choice:
    replica: int
    believed_tokens: int | None  # of the prompt, held there as the router believes


class Router:
    """Picks a replica per request; hears the replicas' KV events if it wants them."""

    name = ""
    uses_events = False

    def __init__(self, replicas: int, unit: int) -> None:
        """``unit``: the replicas' block size (vLLM) or page size (SGLang)."""
        self.replicas = replicas
        self.unit = unit
        self.last = replicas - 1  # so the first tie goes to replica 0

    def choose(self, request: RouteRequest, loads: Sequence[int]) -> Choice:
        raise NotImplementedError

    def observe(self, replica: int, events: Iterable[object]) -> None:
        """A replica's KV events (only a router that ``uses_events`` is given them)."""

    def _first_after_last(self, candidates: Iterable[int]) -> int:
        """Of the tied replicas, the first after the one chosen last."""
        n, last = self.replicas, self.last
        chosen = min(candidates, key=lambda r: (r - last - 1) % n)
        self.last = chosen
        return chosen

    def _best(self, score: Callable[[int], float]) -> int:
        scores = [score(r) for r in range(self.replicas)]
        top = max(scores)
        return self._first_after_last(r for r, s in enumerate(scores) if s == top)


class RoundRobin(Router):
    name = "round-robin"

    def choose(self, request: RouteRequest, loads: Sequence[int]) -> Choice:
        self.last = (self.last + 1) % self.replicas
        return Choice(self.last, None)


class LeastLoaded(Router):
    name = "least-loaded"

    def choose(self, request: RouteRequest, loads: Sequence[int]) -> Choice:
        return Choice(self._best(lambda r: -loads[r]), None)


class PrefixAware(Router):
    """Scores from the KV-event index: matched blocks - load_weight x load."""

    name = "prefix-aware"
    uses_events = True

    def __init__(self, replicas: int, unit: int, load_weight: float = DEFAULT_LOAD_WEIGHT) -> None:
        super().__init__(replicas, unit)
        self.load_weight = load_weight
        self.index = KVEventIndex(replicas)

    def observe(self, replica: int, events: Iterable[object]) -> None:
        self.index.apply(replica, events)

    def choose(self, request: RouteRequest, loads: Sequence[int]) -> Choice:
        hashes = request.block_hashes
        matched = [self.index.matched_blocks(r, hashes) for r in range(self.replicas)]
        weight = self.load_weight
        scores = [matched[r] - weight * loads[r] for r in range(self.replicas)]
        top = max(scores)
        tied = [r for r in range(self.replicas) if scores[r] == top]
        least = min(loads[r] for r in tied)
        chosen = self._first_after_last(r for r in tied if loads[r] == least)
        return Choice(chosen, matched[chosen] * self.unit)


class CacheAware(Router):
    """SGLang's router's cache-aware policy over an approximate tree per worker."""

    name = "cache-aware"

    def __init__(
        self,
        replicas: int,
        unit: int,
        cache_threshold: float = SGLANG_CACHE_THRESHOLD,
        balance_abs_threshold: int = SGLANG_BALANCE_ABS_THRESHOLD,
        balance_rel_threshold: float = SGLANG_BALANCE_REL_THRESHOLD,
        eviction_interval_s: float = SGLANG_EVICTION_INTERVAL_S,
        max_tree_size: int = SGLANG_MAX_TREE_SIZE,
    ) -> None:
        super().__init__(replicas, unit)
        self.cache_threshold = cache_threshold
        self.balance_abs_threshold = balance_abs_threshold
        self.balance_rel_threshold = balance_rel_threshold
        self.eviction_interval_ms = eviction_interval_s * 1000
        self.max_tree_size = max_tree_size
        self.trees = [ApproxTree() for _ in range(replicas)]
        self.next_eviction_ms: float | None = None
        self.imbalanced_routes = 0

    def choose(self, request: RouteRequest, loads: Sequence[int]) -> Choice:
        self._maybe_evict(request.time_ms)
        pieces, weights = request.pieces
        most, least = max(loads), min(loads)
        imbalanced = (
            most - least > self.balance_abs_threshold and most > least * self.balance_rel_threshold
        )
        matched = [tree.match(pieces, weights) for tree in self.trees]
        if imbalanced:
            self.imbalanced_routes += 1
            chosen = self._best(lambda r: -loads[r])
        else:
            best = max(matched)
            rate = best / request.num_tokens if request.num_tokens else 0.0
            if rate > self.cache_threshold:
                chosen = self._first_after_last(r for r, m in enumerate(matched) if m == best)
            else:
                chosen = self._best(lambda r: -self.trees[r].size)
        self.trees[chosen].insert(pieces, weights, request.time_ms)
        return Choice(chosen, matched[chosen])

    def _maybe_evict(self, now_ms: float) -> None:
        """Every ``eviction_interval`` of the clock, each tree cut to ``max_tree_size``."""
        if self.next_eviction_ms is None:
            self.next_eviction_ms = now_ms + self.eviction_interval_ms
        while now_ms >= self.next_eviction_ms:
            for tree in self.trees:
                tree.evict_to(self.max_tree_size)
            self.next_eviction_ms += self.eviction_interval_ms


ROUTERS: dict[str, type[Router]] = {
    cls.name: cls for cls in (RoundRobin, LeastLoaded, PrefixAware, CacheAware)
}
ROUTER_NAMES = tuple(ROUTERS)


def make_router(
    name: str, replicas: int, unit: int, load_weight: float = DEFAULT_LOAD_WEIGHT
) -> Router:
    """The router by its name; ``load_weight`` is the prefix-aware router's."""
    if name not in ROUTERS:
        raise ValueError(f"router must be one of {', '.join(ROUTER_NAMES)}, not {name!r}")
    if name == PrefixAware.name:
        return PrefixAware(replicas, unit, load_weight)
    return ROUTERS[name](replicas, unit)
