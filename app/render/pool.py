"""vLLM's blocks: the GPU block pool, one cell per block, state by colour *and* by text (a
pool of thousands of blocks as runs of consecutive blocks that look alike);
`cached_block_hash_to_block`, hash label -> block id(s) in the map's own order; and CPU
offload's side (its own pool, free queue and hash map, and stores in flight), for the
scenarios that run it.

A cached block's extra keys are those of the chain link that made its hash: LoRA, the
multimodal items it reaches (with the item's offset from the block's first token), the
cache salt, the prompt embeddings' digest. The links carry them as the hash input's text;
a cell shows a short form of it ("img-cat +2", "salt alice").
"""

from __future__ import annotations

import ast

from app.render.gaps import folded, runs_of
from app.render.glossary import code_term, marked_terms, panel_texts, said
from app.render.html import changed_at, esc, panel, swatch_legend, table
from engine.lab.play.vllm.snapshot import BlockRecord, Snapshot
from engine.lab.play.vllm.timeline import Timeline

# Text shown in each cell and in the legend, so state never relies on colour alone.
STATE_TAGS = {"null": "null", "held": "held", "free-cached": "cached", "free-empty": "empty"}
LEGEND = {state: marked_terms(text) for state, text in panel_texts()["pool"]["legend"].items()}
# Above this many blocks the cells shrink to id + ref_cnt (hash in the tooltip).
DENSE_FROM = 40
SMALL_POOL = 12
# From this many blocks the pool is shown as runs of consecutive blocks with the same
# state, ref_cnt and change (one item: "#2,001 to #9,999 · 7,999 empty"): a 10,000-block
# pool's page drops from about 4 MB of cells to kilobytes, and reads at a glance.
# Every built-in scenario (at most 160 blocks) and the lab's step view (at most 400) draw
# each block.
RUNS_FROM = 1_000
# A longer hash map shows its first and last MAP_EDGE entries and the entries changed at
# the step, with a count of the others between.
# Every built-in scenario's map (pools of at most 160 blocks) is shown in full.
MAP_FULL_UP_TO = 256
MAP_EDGE = 16
# The short form of each kind of extra key, from its fields after the tag.
_SHORT = {
    "lora": lambda fields: f"lora {fields[0]}",
    "mm": lambda fields: f"{fields[0]} {int(fields[1]):+d}",
    "cache_salt": lambda fields: f"salt {fields[0]}",
    "prompt_embeds": lambda fields: f"embeds {str(fields[0]).removeprefix('sha256:')[:8]}",
}


def extra_keys_by_label(snapshot: Snapshot) -> dict[str, str]:
    """Hash label -> the extra keys' text, for every hash a request's chain holds."""
    return {
        link.hash_label: link.extra_keys
        for request in snapshot.requests
        for link in request.chain
        if link.extra_keys
    }


def short_extra_keys(text: str) -> str:
    """``"('mm', 'img-cat', 2), ('cache_salt', 'a')"`` -> ``"img-cat +2 · salt a"``."""
    try:
        keys = ast.literal_eval(f"({text},)")
    except (ValueError, SyntaxError):
        return text
    parts = []
    for key in keys:
        short = _SHORT.get(key[0]) if isinstance(key, tuple) and key else None
        parts.append(short(key[1:]) if short else repr(key))
    return " · ".join(parts)


def changed_blocks(timeline: Timeline, step: int) -> set[int]:
    """Blocks whose view differs from the previous step's (nothing changed at step 0)."""
    return changed_at(timeline, step, lambda s: s.blocks, lambda b: b.block_id)


def block_cell(
    block: BlockRecord, changed: bool, testid: str = "block", extra_keys: str | None = None
) -> str:
    """One block's cell; ``extra_keys``, the hash input's extra keys, when its hash has some."""
    hash_text = block.hash_label or "—"
    title = f"block {block.block_id}: ref_cnt {block.ref_cnt}, " + (
        f"hash {block.block_hash}" if block.block_hash else "no hash"
    )
    extra = ""
    if extra_keys:
        title += f", extra keys {extra_keys}"
        extra = f'<span class="xk mono">{esc(short_extra_keys(extra_keys))}</span>'
    return (
        f'<li class="cell state-{block.state}{" changed" if changed else ""}" '
        f'data-testid="{testid}-{block.block_id}" data-block-id="{block.block_id}" '
        f'data-ref-cnt="{block.ref_cnt}" data-state="{block.state}" '
        f'data-hash="{esc(block.hash_label or "")}" data-changed="{str(changed).lower()}" '
        f'title="{esc(title)}">'
        f'<span class="top"><span class="id">#{block.block_id}</span>'
        f'<span class="tag">{STATE_TAGS[block.state]}</span>'
        f'<span class="tag-short" aria-hidden="true">{STATE_TAGS[block.state][0]}</span></span>'
        f'<span class="rc"><span class="rc-label">ref_cnt </span><b>{block.ref_cnt}</b></span>'
        f'<span class="hash mono">{esc(hash_text)}</span>{extra}'
        f"{'<span class=sr-only>, changed at this step</span>' if changed else ''}"
        "</li>"
    )


def run_item(first: BlockRecord, last: BlockRecord, changed: bool) -> str:
    """Blocks first..last, all in one state with one ref_cnt, as one item."""
    count = last.block_id - first.block_id + 1
    tag = STATE_TAGS[first.state]
    rc = f" · ref_cnt <b>{first.ref_cnt}</b>" if first.state == "held" else ""
    title = (
        f"blocks {first.block_id} to {last.block_id}: {count:,} blocks, {tag}"
        + (f", ref_cnt {first.ref_cnt}" if first.state == "held" else "")
        + (", changed at this step" if changed else "")
    )
    return (
        f'<li class="run state-{first.state}{" changed" if changed else ""}" '
        f'data-first="{first.block_id}" data-last="{last.block_id}" '
        f'data-ref-cnt="{first.ref_cnt}" data-state="{first.state}" '
        f'data-changed="{str(changed).lower()}" title="{title}">'
        f'<span class="id">#{first.block_id:,} to #{last.block_id:,}</span> '
        f"<span>{count:,} {tag}{rc}</span>"
        f"{'<span class=sr-only>, changed at this step</span>' if changed else ''}"
        "</li>"
    )


def pool_cells(
    blocks: tuple[BlockRecord, ...], changed: set[int], extra_keys: dict[str, str] | None = None
) -> str:
    """Every block's cell, or from RUNS_FROM blocks, a cell per run of look-alike blocks
    (a block alone in its run keeps its own cell, hash and all)."""
    keys = extra_keys or {}
    ids = [b.block_id for b in blocks]
    if len(blocks) < RUNS_FROM:
        runs = [range(i, i + 1) for i in ids]
    else:
        runs = runs_of(ids, lambda i: (blocks[i].state, blocks[i].ref_cnt, i in changed), ())
    return "".join(
        block_cell(
            blocks[run.start],
            run.start in changed,
            extra_keys=keys.get(blocks[run.start].hash_label or ""),
        )
        if len(run) == 1
        else run_item(blocks[run.start], blocks[run.stop - 1], run.start in changed)
        for run in runs
    )


def render_pool(timeline: Timeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    changed = changed_blocks(timeline, step)
    count = len(snapshot.blocks)
    layout = " runs" if count >= RUNS_FROM else " dense" if count >= DENSE_FROM else ""
    # Small pools get even rows (10 blocks: 2 rows of 5); big ones wrap to the width.
    columns = f' style="--cols:{-(-count // 2)}"' if count <= SMALL_POOL else ""
    fixed = " fixed" if count <= SMALL_POOL else ""
    cells = pool_cells(snapshot.blocks, changed, extra_keys_by_label(snapshot))
    held = sum(1 for b in snapshot.blocks if b.state == "held")
    runs_note = " · consecutive blocks alike shown as one run" if count >= RUNS_FROM else ""
    return panel(
        "GPU block pool",
        f"GPU block pool · {count:,} blocks of {timeline.block_size} tokens{runs_note}",
        f'<ol class="pool{layout}{fixed}"{columns}>{cells}</ol>'
        f"{swatch_legend('state-', LEGEND)}"
        f'<div class="usage">{held:,} held · usage {snapshot.usage:.0%} of the usable blocks</div>',
        ' data-testid="pool"',
    )


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
        text = extra_keys.get(entry.hash_label)
        extra = (
            f'<td class="xk-cell mono" title="{esc(text)}">{esc(short_extra_keys(text))}</td>'
            if text
            else '<td class="xk-cell"></td>'
        )
        return (
            f'<tr data-hash="{esc(entry.hash_label)}" '
            f'data-block-id="{" ".join(str(b) for b in entry.block_ids)}"'
            f"{' class=changed' if entry.block_hash in changed_hashes else ''}>"
            f'<td class="mono" title="{esc(entry.block_hash)}">{esc(entry.hash_label)}</td>'
            f"<td>{chips}</td>{extra if keyed else ''}</tr>"
        )

    # A long map shows its first and last entries and every entry changed at the step.
    rows = folded(
        [range(i, i + 1) for i in range(len(entries))],
        row,
        lambda count: (
            f'<tr class="gap" data-gap="{count}"><td colspan="{columns}" class="empty-note">'
            f"… {count:,} more entries, unchanged at this step</td></tr>"
        ),
        MAP_EDGE,
        MAP_FULL_UP_TO,
        keep={i for i, e in enumerate(entries) if e.block_hash in changed_hashes},
    )
    body = (
        rows or f'<tr><td colspan="{columns}" class="empty-note">empty: nothing can hit</td></tr>'
    )
    several = any(len(e.block_ids) > 1 for e in snapshot.hash_map)
    note = f'<div class="note">{said("pool.several")}</div>' if several else ""
    head = "<th>hash</th><th>block(s)</th>" + ("<th>extra keys</th>" if keyed else "")
    hash_map = table(head, body, ' data-testid="hash-map"')
    return panel(
        "cached_block_hash_to_block",
        code_term("cached-block-hash-to-block"),
        f'<div class="table-scroll tall">{hash_map}</div>{note}',
    )


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
    return panel(
        "CPU offload",
        f"CPU offload pool · {count} blocks",
        f'<ol class="pool fixed" style="--cols:{-(-count // 2)}">{cells}</ol>'
        '<div class="offload-grid">'
        f"<div><b>stores in flight</b> (each holds a ref on its GPU and CPU blocks)"
        f'<ul data-testid="stores">{stores}</ul></div>'
        f'<div><b>CPU hash map</b><ul data-testid="cpu-hash-map">{entries}</ul></div>'
        f'<div><b>CPU free queue</b>, head first: <span class="mono">{queue}</span></div></div>',
        f' data-testid="offload" data-stores="{len(offload.stores_in_flight)}"',
        "box offload",
    )
