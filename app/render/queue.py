"""`free_block_queue` as a strip from head (reused first) to tail.

Three marks, from the step's data: blocks that arrived at this step; blocks that
were free before and after but changed their place relative to the others that
stayed (a hit taken out of the middle moves nobody); and blocks the pool took and
freed within the step that came back to the same place (the engine records them).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

from app.render.gaps import folded, runs_of
from app.render.glossary import marked_terms, panel_texts
from app.render.html import esc, panel, previous_and_current
from engine.lab.play.vllm.timeline import Timeline

# A longer queue is shown as runs of consecutive ids, and past 2 x EDGE runs, as its head,
# its tail and the blocks marked at the step, with a count of the others between.
# Every built-in scenario's queue (pools of at most 160 blocks) is shown in full.
FULL_UP_TO = 256
EDGE = 16
CAPTION = marked_terms(panel_texts()["queue"]["caption"])
# A block's change at the step -> its class, its title's words, the caption's word.
CHANGES = {
    "arrived": (" changed", ", arrived at this step", "arrived"),
    "moved": (" moved", ", moved at this step", "moved"),
    "returned": (" returned", ", taken and freed within this step", "taken and freed"),
}


def _keeping_order(order: Sequence[int]) -> set[int]:
    """Indices into ``order`` of one longest increasing subsequence."""
    tails: list[int] = []  # tails[k]: index of the smallest tail of a run of length k + 1
    tail_values: list[int] = []  # order[tails[k]], kept beside it so each search is log n
    previous: list[int] = [-1] * len(order)
    for i, value in enumerate(order):
        k = bisect_left(tail_values, value)
        previous[i] = tails[k - 1] if k else -1
        if k == len(tails):
            tails.append(i)
            tail_values.append(value)
        else:
            tails[k] = i
            tail_values[k] = value
    kept: set[int] = set()
    i = tails[-1] if tails else -1
    while i >= 0:
        kept.add(i)
        i = previous[i]
    return kept


def queue_marks(before: Sequence[int], after: Sequence[int]) -> tuple[set[int], set[int]]:
    """(arrived, moved): blocks new to the queue, and blocks that stayed but changed
    their order relative to the others that stayed (the fewest such blocks)."""
    arrived = set(after) - set(before)
    position = {b: i for i, b in enumerate(before)}
    stayed = [b for b in after if b in position]
    order = [position[b] for b in stayed]
    if order == sorted(order):  # (nobody moved: most steps of a 10,000-block queue)
        return arrived, set()
    kept = _keeping_order(order)
    moved = {b for i, b in enumerate(stayed) if i not in kept}
    return arrived, moved


def _long_queue(
    queue: Sequence[int],
    state: Callable[[int], str],
    marked: set[int],
    item: Callable[[int], str],
) -> str:
    """A long queue, readable: runs of consecutive ids as one item ("12 to 480"), and if
    still long, the head and the tail and every marked block, with a count between."""

    def run_item(run: range) -> str:
        if len(run) == 1:
            return item(run.start)
        first, last, kind = run.start, run.stop - 1, state(run.start)
        return (
            f'<li class="state-{kind} run" data-first="{first}" data-last="{last}" '
            f'title="#{first} to #{last}: {len(run):,} blocks, {esc(kind)}, in this order">'
            f"{first} to {last}</li>"
        )

    return folded(
        runs_of(queue, state, marked),
        run_item,
        lambda blocks: (
            f'<li class="gap" data-gap="{blocks}" title="{blocks:,} blocks not shown">'
            f"… {blocks:,} more …</li>"
        ),
        EDGE,
        keep=marked,
    )


def render_queue(timeline: Timeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    arrived, moved = queue_marks(*previous_and_current(timeline, step, lambda s: s.free_queue))
    returned = set(timeline.steps[step].facts.taken_and_freed) - arrived - moved

    marks = {"arrived": arrived, "moved": moved, "returned": returned}

    def item(b: int) -> str:
        state = snapshot.block(b).state
        change = next((name for name, blocks in marks.items() if b in blocks), "")
        mark, note, _ = CHANGES.get(change, ("", "", ""))
        return (
            f'<li class="state-{state}{mark}" data-block-id="{b}" data-change="{change}" '
            f'title="#{b}: {esc(state)}{note}">{b}</li>'
        )

    queue = snapshot.free_queue
    if len(queue) <= FULL_UP_TO:
        items = "".join(item(b) for b in queue)
    else:
        items = _long_queue(
            queue, lambda b: snapshot.block(b).state, arrived | moved | returned, item
        )
    if not items:
        items = '<li class="empty-note" style="border:none">empty: every block is held</li>'
    counts = [f"{len(marks[name])} {said}" for name, (*_, said) in CHANGES.items() if marks[name]]
    change_note = f" · this step: {', '.join(counts)}" if counts else ""
    return panel(
        "free_block_queue",
        "<code>free_block_queue</code> · head is reused first",
        '<div class="fq">'
        '<span class="fq-end"><strong>head</strong>reused first →</span>'
        f'<ol class="fq-list" data-testid="free-queue" '
        f'aria-label="free blocks from head (reused first) to tail">{items}</ol>'
        '<span class="fq-end" style="text-align:right"><strong>tail</strong>reused last</span>'
        "</div>"
        f'<div class="fq-caption">{len(snapshot.free_queue)} free{change_note} · {CAPTION}</div>',
    )
