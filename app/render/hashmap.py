"""`cached_block_hash_to_block`: hash label -> block id(s), in the map's own order."""

from __future__ import annotations

from app.render.gaps import with_gaps
from app.render.glossary import code_term
from app.render.html import changed_at, esc
from engine.lab.play.vllm.timeline import Timeline

# A longer map shows its first and last EDGE entries and the entries changed at the step,
# with a count of the others between.
# Every built-in scenario's map (pools of at most 160 blocks) is shown in full.
FULL_UP_TO = 256
EDGE = 16


def render_hash_map(timeline: Timeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    changed_hashes = changed_at(timeline, step, lambda s: s.hash_map, lambda e: e.block_hash)
    rows = []
    entries = snapshot.hash_map
    # A long map shows its first and last entries and every entry changed at the step.
    shown = (
        range(len(entries))
        if len(entries) <= FULL_UP_TO
        else with_gaps(
            len(entries),
            [i for i, e in enumerate(entries) if e.block_hash in changed_hashes],
            EDGE,
        )
    )
    for position in shown:
        if isinstance(position, range):
            rows.append(
                f'<tr class="gap" data-gap="{len(position)}"><td colspan="2" class="empty-note">'
                f"… {len(position):,} more entries, unchanged at this step</td></tr>"
            )
            continue
        entry = entries[position]
        changed = entry.block_hash in changed_hashes
        chips = "".join(
            f'<span class="chip state-{snapshot.block(b).state}{" first" if i == 0 else ""}">'
            f"#{b}</span>"
            for i, b in enumerate(entry.block_ids)
        )
        rows.append(
            f'<tr data-hash="{esc(entry.hash_label)}" '
            f'data-block-id="{" ".join(str(b) for b in entry.block_ids)}"'
            f"{' class=changed' if changed else ''}>"
            f'<td class="mono" title="{esc(entry.block_hash)}">{esc(entry.hash_label)}</td>'
            f"<td>{chips}</td></tr>"
        )
    body = (
        "".join(rows) or '<tr><td colspan="2" class="empty-note">empty: nothing can hit</td></tr>'
    )
    several = any(len(e.block_ids) > 1 for e in snapshot.hash_map)
    note = (
        '<div class="note">Several blocks under one hash: a lookup returns the first '
        "(underlined).</div>"
        if several
        else ""
    )
    return (
        f'<section class="box" aria-label="cached_block_hash_to_block">'
        f'<h3 class="panel-title">{code_term("cached-block-hash-to-block")}</h3>'
        '<div class="table-scroll tall"><table class="compact" data-testid="hash-map">'
        "<thead><tr><th>hash</th><th>block(s)</th>"
        f"</tr></thead><tbody>{body}</tbody></table></div>{note}"
        "</section>"
    )
