"""Prefix-cache counters (vLLM's ``PrefixCacheStats`` in ``v1/metrics/stats.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PrefixCacheCounters:
    """Counts in tokens, not requests, as the Prometheus counters are.

    Requests that skip the cache lookup are not recorded at all, so
    hits / queries is an honest hit rate. Re-admitted preempted requests are
    counted apart: preempted_hits / preempted_queries is how much of a victim's
    work survived in the cache.
    """

    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0


@dataclass
class PrefixCacheStats(PrefixCacheCounters):
    """The counters of one interval, as the scheduler hands them out."""

    reset: bool = False

    def record(self, num_tokens: int, num_hits: int, preempted: bool) -> None:
        if preempted:
            self.preempted_requests += 1
            self.preempted_queries += num_tokens
            self.preempted_hits += num_hits
        else:
            self.requests += 1
            self.queries += num_tokens
            self.hits += num_hits
