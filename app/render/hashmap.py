"""`cached_block_hash_to_block`: hash label -> block id(s), in the map's own order."""

from __future__ import annotations

from app.render.extra_keys import extra_keys_by_label, short_extra_keys
from app.render.gaps import folded
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
    entries = snapshot.hash_map
    extra_keys = extra_keys_by_label(snapshot)
    # The extra keys' column only where some cached hash has them (salt, LoRA, images...).
    keyed = any(e.hash_label in extra_keys for e in entries)
    columns = 3 if keyed else 2

    def row(at: range) -> str:
        entry = entries[at.start]
        chips = "".join(
            f'<span class="chip state-{snapshot.block(b).state}{" first" if i == 0 else ""}">'
            f"#{b}</span>"
            for i, b in enumerate(entry.block_ids)
        )
        return (
            f'<tr data-hash="{esc(entry.hash_label)}" '
            f'data-block-id="{" ".join(str(b) for b in entry.block_ids)}"'
            f"{' class=changed' if entry.block_hash in changed_hashes else ''}>"
            f'<td class="mono" title="{esc(entry.block_hash)}">{esc(entry.hash_label)}</td>'
            f"<td>{chips}</td>{_extra_cell(extra_keys.get(entry.hash_label)) if keyed else ''}</tr>"
        )

    # A long map shows its first and last entries and every entry changed at the step.
    rows = folded(
        [range(i, i + 1) for i in range(len(entries))],
        row,
        lambda count: (
            f'<tr class="gap" data-gap="{count}"><td colspan="{columns}" class="empty-note">'
            f"… {count:,} more entries, unchanged at this step</td></tr>"
        ),
        EDGE,
        FULL_UP_TO,
        keep={i for i, e in enumerate(entries) if e.block_hash in changed_hashes},
    )
    body = (
        rows or f'<tr><td colspan="{columns}" class="empty-note">empty: nothing can hit</td></tr>'
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
        + ("<th>extra keys</th>" if keyed else "")
        + f"</tr></thead><tbody>{body}</tbody></table></div>{note}"
        "</section>"
    )


def _extra_cell(text: str | None) -> str:
    if not text:
        return '<td class="xk-cell"></td>'
    return f'<td class="xk-cell mono" title="{esc(text)}">{esc(short_extra_keys(text))}</td>'
