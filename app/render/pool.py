"""The GPU block pool: one cell per block, state by colour *and* by text; a pool of
thousands of blocks as runs of consecutive blocks that look alike."""

from __future__ import annotations

from app.render.extra_keys import extra_keys_by_label, short_extra_keys
from app.render.gaps import runs_of
from app.render.glossary import marked_terms, panel_texts
from app.render.html import changed_at, esc
from engine.lab.play.vllm.snapshot import BlockRecord
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
    if len(blocks) < RUNS_FROM:
        return "".join(
            block_cell(b, b.block_id in changed, extra_keys=keys.get(b.hash_label or ""))
            for b in blocks
        )
    runs = runs_of(
        [b.block_id for b in blocks],
        lambda i: (blocks[i].state, blocks[i].ref_cnt, i in changed),
        (),
    )
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
    legend = "".join(
        f'<li><span class="swatch state-{state}"></span>{text}</li>'
        for state, text in LEGEND.items()
    )
    legend += '<li><span class="swatch changed"></span>changed at this step</li>'
    held = sum(1 for b in snapshot.blocks if b.state == "held")
    runs_note = " · consecutive blocks alike shown as one run" if count >= RUNS_FROM else ""
    return (
        f'<section class="box" data-testid="pool" aria-label="GPU block pool">'
        f'<h3 class="panel-title">GPU block pool · {count:,} blocks of '
        f"{timeline.block_size} tokens{runs_note}</h3>"
        f'<ol class="pool{layout}{fixed}"{columns}>{cells}</ol>'
        f'<ul class="legend" aria-label="legend">{legend}</ul>'
        f'<div class="usage">{held:,} held · usage {snapshot.usage:.0%} of the usable blocks</div>'
        "</section>"
    )
