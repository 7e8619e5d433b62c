"""A long list shown readable: its ends, the places that matter, a count between."""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Sequence


def with_gaps(count: int, keep: Collection[int], edge: int) -> list[int | range]:
    """Positions 0..count-1 to show in a long list: the first and last ``edge`` and every
    one in ``keep``; each run of the others becomes one range (shown as a count)."""
    shown = sorted({*range(min(edge, count)), *range(max(0, count - edge), count), *keep})
    out: list[int | range] = []
    previous = -1
    for i in shown:
        if i > previous + 1:
            out.append(range(previous + 1, i))
        out.append(i)
        previous = i
    return out


def runs_of(
    ids: Sequence[int], kind: Callable[[int], Hashable], marked: Collection[int]
) -> list[range]:
    """``ids`` in order as runs of consecutive ids of one ``kind``; a marked id is a run
    of its own (it is shown with its details)."""
    runs: list[range] = []
    # The open run (none while start == stop), its start's kind, and whether it may grow
    # (its start is not marked): a range is made once per run, not once per id.
    start = stop = 0
    start_kind: Hashable = None
    grows = False
    for b in ids:
        if grows and b == stop and b not in marked and kind(b) == start_kind:
            stop = b + 1
            continue
        if stop != start:
            runs.append(range(start, stop))
        start, stop, grows = b, b + 1, b not in marked
        start_kind = kind(b) if grows else None
    if stop != start:
        runs.append(range(start, stop))
    return runs


def folded(
    runs: Sequence[range],
    item: Callable[[range], str],
    gap: Callable[[int], str],
    edge: int,
    full_up_to: int = 0,
    keep: Collection[int] = (),
) -> str:
    """Each run's ``item``; past ``full_up_to`` runs, the first and last ``edge`` and those
    starting in ``keep``, a ``gap`` (of how many ids) for each run of the others."""
    kept = [i for i, run in enumerate(runs) if run.start in keep]
    shown = range(len(runs)) if len(runs) <= full_up_to else with_gaps(len(runs), kept, edge)
    return "".join(
        gap(sum(len(runs[i]) for i in at)) if isinstance(at, range) else item(runs[at])
        for at in shown
    )
