"""The gap between an unlimited-capacity replay's hit rate and the paper's cache ratio, and
its causes, in tokens that add up (for a sentence the app fills in).

With no eviction, what a prefix cache can reuse of request ``r`` is ``L_r``: the longest
token prefix it shares with any earlier prompt. The trace's ids give it exactly (equal ids
at equal positions after equal ids are equal tokens; a unit's tokens match up to the
shorter of the two units, and the match goes on past a unit only when both are whole):
``reusable_tokens = sum(L_r)``, what a cache counting to the token and keeping every token
would find. From there to the engine's hits:

    paper_tokens = hits + cap_tokens + granularity_tokens + beyond_trace_tokens

- ``granularity_tokens``: ``sum(L_r mod block_size)``, the part of a match that ends
  inside a block, which a cache of whole blocks (vLLM) cannot reuse (0 at SGLang's page
  size 1). Split by where the match ends: in the request's own partial last unit
  (``partial_last_unit_tokens``) or in a unit an earlier prompt had only in part
  (``partial_earlier_tokens``);
- ``cap_tokens``: the hit the engine gives up because the last prompt token is always
  computed (vLLM recomputes a whole last block, SGLang one token);
- ``beyond_trace_tokens``: what the paper's ratio counts beyond anything in the released
  trace (negative when the trace reuses more than the ratio).

Also the ratio counted in ids (``id_ratio``: ids found by prefix matching over all ids),
which the paper may have used. Standard library only; pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from engine.lab.traces.replay import InOrderReplay
from engine.lab.traces.request_trace import TRACE_BLOCK_TOKENS, TraceEntry


@dataclass(frozen=True)
class Reuse:
    """What the ids say each request can reuse, with unlimited capacity."""

    matched: list[int]  # L_r: tokens shared with an earlier prompt, to the token
    ends_in_partial_last_unit: list[bool]  # L_r ends inside the request's partial last unit
    ids_total: int
    ids_reused: int  # ids found by prefix matching (their unit seen before, whole or not)


def reuse_from_ids(entries: Sequence[TraceEntry]) -> Reuse:
    """Each request's longest shared token prefix, from its ids alone (no engine)."""
    prefixes: dict[tuple[int, int], int] = {}  # (prefix number, id) -> prefix number
    longest: list[int] = [0]  # per prefix number: the longest unit seen with it
    matched: list[int] = []
    in_partial: list[bool] = []
    ids_total = ids_reused = 0
    for entry in entries:
        length = entry.input_length
        number, shared, going = 0, 0, True
        for position, hash_id in enumerate(entry.hash_ids):
            unit = min(TRACE_BLOCK_TOKENS, length - position * TRACE_BLOCK_TOKENS)
            key = (number, hash_id)
            found = prefixes.get(key)
            ids_total += 1
            if found is None:
                found = prefixes[key] = len(longest)
                longest.append(0)
                going = False
            else:
                ids_reused += 1
                if going:
                    common = min(unit, longest[found])
                    shared += common
                    going = common == TRACE_BLOCK_TOKENS
            longest[found] = max(longest[found], unit)
            number = found
        matched.append(shared)
        in_partial.append(shared > length // TRACE_BLOCK_TOKENS * TRACE_BLOCK_TOKENS)
    return Reuse(matched, in_partial, ids_total, ids_reused)


@dataclass(frozen=True)
class PaperGap:
    """Tokens (and the rates they make) between an engine's unlimited replay and the
    paper's ratio; ``paper_*`` and ``gap_tokens``/``beyond_trace_tokens`` are None when
    the trace is not one of the paper's."""

    engine: str
    block_size: int
    prompt_tokens: int
    paper_cache_ratio: float | None
    paper_tokens: int | None  # the ratio in tokens of this trace, rounded
    hits: int
    hit_rate: float
    gap_tokens: int | None  # paper_tokens - hits
    cap_tokens: int
    granularity_tokens: int
    partial_last_unit_tokens: int
    partial_earlier_tokens: int
    beyond_trace_tokens: int | None
    reusable_tokens: int  # sum(L_r): the most any prefix cache finds, to the token
    reusable_rate: float
    id_ratio: float
    ids_total: int
    ids_reused: int

    def rate(self, tokens: int | None) -> float | None:
        """Tokens as a share of the trace's prompt tokens."""
        return None if tokens is None else tokens / self.prompt_tokens

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in (
            "gap_tokens",
            "cap_tokens",
            "granularity_tokens",
            "partial_last_unit_tokens",
            "partial_earlier_tokens",
            "beyond_trace_tokens",
        ):
            data[name.replace("_tokens", "_rate")] = self.rate(data[name])
        return data


def paper_gap(
    entries: Sequence[TraceEntry], unlimited: InOrderReplay, paper_ratio: float | None
) -> PaperGap:
    """The gap and its causes for ``unlimited``, a replay of ``entries`` in which nothing
    was evicted (raises ValueError otherwise: the causes assume every prompt was kept)."""
    if unlimited.evictions or unlimited.skipped_requests or not unlimited.completed:
        raise ValueError("the gap is for a whole replay with nothing evicted or skipped")
    if unlimited.requests != len(entries):
        raise ValueError(f"the replay has {unlimited.requests} requests, the trace {len(entries)}")
    reuse = reuse_from_ids(entries)
    block_size = unlimited.block_size
    granularity = [m % block_size for m in reuse.matched]
    in_partial = sum(
        g for g, p in zip(granularity, reuse.ends_in_partial_last_unit, strict=True) if p
    )
    reusable = sum(reuse.matched)
    prompt_tokens = unlimited.prompt_tokens
    paper_tokens = None if paper_ratio is None else round(paper_ratio * prompt_tokens)
    cap = unlimited.uncapped_hits - unlimited.hits
    return PaperGap(
        engine=unlimited.engine,
        block_size=block_size,
        prompt_tokens=prompt_tokens,
        paper_cache_ratio=paper_ratio,
        paper_tokens=paper_tokens,
        hits=unlimited.hits,
        hit_rate=unlimited.hit_rate,
        gap_tokens=None if paper_tokens is None else paper_tokens - unlimited.hits,
        cap_tokens=cap,
        # what the replay found against what the ids say it could, to the token
        granularity_tokens=reusable - unlimited.uncapped_hits,
        partial_last_unit_tokens=in_partial,
        partial_earlier_tokens=sum(granularity) - in_partial,
        beyond_trace_tokens=None if paper_tokens is None else paper_tokens - reusable,
        reusable_tokens=reusable,
        reusable_rate=reusable / prompt_tokens,
        id_ratio=reuse.ids_reused / reuse.ids_total,
        ids_total=reuse.ids_total,
        ids_reused=reuse.ids_reused,
    )
