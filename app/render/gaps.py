"""A long list shown readable: its ends, the places that matter, a count between."""

from __future__ import annotations

from collections.abc import Collection


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
