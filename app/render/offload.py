"""CPU offload's side: its own block pool, free queue and hash map, and stores in flight.

Rendered only for scenarios that run CPU offload (the snapshot has ``offload``).
"""

from __future__ import annotations

from app.render.html import changed_at, esc
from app.render.pool import block_cell
from engine.lab.play.vllm.timeline import Timeline


def render_offload(timeline: Timeline, step: int) -> str:
    offload = timeline.steps[step].snapshot.offload
    if offload is None:
        return ""
    changed = changed_at(
        timeline, step, lambda s: s.offload.cpu_blocks if s.offload else (), lambda b: b.block_id
    )
    cells = "".join(
        block_cell(b, b.block_id in changed, testid="cpu-block") for b in offload.cpu_blocks
    )
    queue = " → ".join(str(b) for b in offload.cpu_free_queue) or "empty"
    entries = (
        "".join(
            f'<li data-hash="{esc(e.hash_label)}"><span class="mono">{esc(e.hash_label)}</span> → '
            + " ".join(f"#{b}" for b in e.block_ids)
            + "</li>"
            for e in offload.cpu_hash_map
        )
        or '<li class="empty-note">empty</li>'
    )
    stores = (
        "".join(
            f'<li data-store-event="{s.store_event}">store {s.store_event}: GPU '
            + ", ".join(
                f"#{g} → CPU #{c}" for g, c in zip(s.gpu_block_ids, s.cpu_block_ids, strict=True)
            )
            + "</li>"
            for s in offload.stores_in_flight
        )
        or '<li class="empty-note">none</li>'
    )
    count = len(offload.cpu_blocks)
    return (
        f'<section class="box offload" data-testid="offload" '
        f'data-stores="{len(offload.stores_in_flight)}" aria-label="CPU offload">'
        f'<h3 class="panel-title">CPU offload pool · {count} blocks</h3>'
        f'<ol class="pool fixed" style="--cols:{-(-count // 2)}">{cells}</ol>'
        '<div class="offload-grid">'
        f"<div><b>stores in flight</b> (each holds a ref on its GPU and CPU blocks)"
        f'<ul data-testid="stores">{stores}</ul></div>'
        f'<div><b>CPU hash map</b><ul data-testid="cpu-hash-map">{entries}</ul></div>'
        f'<div><b>CPU free queue</b>, head first: <span class="mono">{queue}</span></div>'
        "</div></section>"
    )
