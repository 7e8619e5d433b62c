"""`free_block_queue` as a strip from head (reused first) to tail."""

from __future__ import annotations

from app.views.base import StepView, esc
from engine.timeline import Timeline


def render_queue(timeline: Timeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    before = timeline.steps[step - 1].snapshot.free_queue if step > 0 else snapshot.free_queue
    moved = set(snapshot.free_queue) - set(before)  # newly freed at this step
    items = "".join(
        f'<li class="state-{snapshot.block(b).state}{" changed" if b in moved else ""}" '
        f'data-block-id="{b}" title="block {b}: {esc(snapshot.block(b).state)}">{b}</li>'
        for b in snapshot.free_queue
    )
    if not items:
        items = '<li class="empty-note" style="border:none">empty: every block is held</li>'
    return (
        f'<section class="box" aria-label="free_block_queue">'
        '<h3 class="panel-title"><code>free_block_queue</code> · head is reused first</h3>'
        '<div class="fq">'
        '<span class="fq-end"><strong>head</strong>reused first →</span>'
        f'<ol class="fq-list" data-testid="free-queue" '
        f'aria-label="free blocks from head (reused first) to tail">{items}</ol>'
        '<span class="fq-end" style="text-align:right"><strong>tail</strong>freed last</span>'
        "</div>"
        f'<div class="fq-caption">{len(snapshot.free_queue)} free · new blocks are taken from the '
        "head; a cached block stays findable until it reaches the head and is handed out</div>"
        "</section>"
    )


class QueueView(StepView):
    render = staticmethod(render_queue)
