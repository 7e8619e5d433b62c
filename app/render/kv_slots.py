"""SGLang's token-to-KV slot pool (pages when ``page_size > 1``) at a step: each slot's
state in slot order, the free list in the allocator's order (the front is taken
first), and the tree's sizes. Runs of consecutive slots alike are one item, so a pool
of thousands of slots stays a few lines."""

from __future__ import annotations

from app.render.gaps import folded, runs_of
from app.render.glossary import code_term, panel_texts, said
from app.render.html import esc, panel, swatch_legend
from app.render.radix_tree import node_units, run_text, unit_word
from engine.lab.play.sglang.snapshot import ROOT_ID, SGLangSnapshot
from engine.lab.play.sglang.timeline import SGLangTimeline

# The free list past this many runs of consecutive slots shows its front and back
# EDGE runs and a count between.
FREE_RUNS_FULL = 24
EDGE = 8
# The pool past this many runs shows its first and last EDGE runs and every run that
# changed at the step, with a count between.
POOL_RUNS_FULL = 64

# Slot (or page) states, each with the word shown beside its colour.
UNIT_STATES: dict[str, str] = panel_texts()["kv_slots"]["states"]


def unit_ids(snapshot: SGLangSnapshot) -> range:
    """Every slot of the pool (slot 0, SGLang's padded slot, is not one), or every page."""
    return range(1, snapshot.num_slots // snapshot.page_size + 1)


def free_units(snapshot: SGLangSnapshot) -> tuple[int, ...]:
    """The free slots (pages) in the allocator's order: the front is taken first."""
    return snapshot.free_pages if snapshot.page_size > 1 else snapshot.free_slots


def unit_states(snapshot: SGLangSnapshot) -> dict[int, str]:
    """Slot (page) -> its state: in the tree (protected while a lock holds its node,
    evictable otherwise), free, or held by a request (its own slots, not in the tree)."""
    page_size = snapshot.page_size
    states = {unit: "free" for unit in free_units(snapshot)}
    for request in snapshot.requests:
        if request.status == "running":
            states.update((s // page_size, "held") for s in request.kv_row)
    for node in snapshot.nodes:
        if node.node_id != ROOT_ID:
            state = "protected" if node.lock_ref > 0 else "evictable"
            states.update((u, state) for u in node_units(node, page_size))
    return states


def changed_units(timeline: SGLangTimeline, step: int) -> set[int]:
    """Slots (pages) whose state differs from the previous step's, and those the step
    handed out or took back (nothing changed at step 0)."""
    if step == 0:
        return set()
    current = timeline.steps[step]
    before = unit_states(timeline.steps[step - 1].snapshot)
    now = unit_states(current.snapshot)
    page_size = current.snapshot.page_size
    touched = {s // page_size for s in (*current.facts.allocated, *current.facts.freed)}
    return {u for u in unit_ids(current.snapshot) if before.get(u) != now.get(u)} | touched


def _run_item(run: range, state: str, changed: bool, word: str) -> str:
    first, last = run.start, run.stop - 1
    where = f"#{first}" if first == last else f"#{first} to #{last}"
    count = f" ({len(run):,})" if len(run) > 1 else ""
    mark = ' <span class="ch">changed</span>' if changed else ""
    return (
        f'<li class="srun s-{state}{" changed" if changed else ""}" data-first="{first}" '
        f'data-last="{last}" data-state="{state}" data-changed="{str(changed).lower()}" '
        f'title="{word} {first} to {last}: {esc(UNIT_STATES[state])}'
        f'{", changed at this step" if changed else ""}">'
        f'<span class="id">{where}</span>{count} {esc(UNIT_STATES[state])}{mark}</li>'
    )


def _gap(units: int, word: str) -> str:
    return f'<li class="srun gap" data-gap="{units}">… {units:,} more {word} …</li>'


def render_kv_slots(timeline: SGLangTimeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    page_size = snapshot.page_size
    word = unit_word(page_size)
    states = unit_states(snapshot)
    changed = changed_units(timeline, step)
    ids = list(unit_ids(snapshot))
    cells = folded(
        runs_of(ids, lambda u: (states.get(u, "free"), u in changed), ()),
        lambda run: _run_item(run, states.get(run.start, "free"), run.start in changed, word),
        lambda units: _gap(units, word),
        EDGE,
        POOL_RUNS_FULL,
        keep=changed,
    )
    free = free_units(snapshot)
    free_list = (
        folded(
            runs_of(free, lambda _: 0, ()),
            lambda run: (
                f'<li class="frun" data-first="{run.start}" data-last="{run.stop - 1}">'
                f"{run_text(run)}</li>"
            ),
            lambda units: _gap(units, word),
            EDGE,
            FREE_RUNS_FULL,
        )
        or '<li class="empty-note">empty: every slot is in use</li>'
    )
    held = sum(1 for s in states.values() if s == "held")
    pages = f": {len(ids):,} pages" if page_size > 1 else ""
    return panel(
        "KV slot pool",
        said("kv_slots.title", slots=snapshot.num_slots, page_size=page_size, pages=pages),
        f'<ol class="slots" data-testid="slot-runs" aria-label="{word} in order, '
        f'consecutive {word} alike as one run">{cells}</ol>'
        f"{swatch_legend('s-', {state: esc(text) for state, text in UNIT_STATES.items()})}"
        f'<div class="free-head"><strong>free list</strong> · {len(free):,} {word}, '
        "in the allocator's order: the front is taken first</div>"
        f'<ol class="free-list mono" data-testid="free-slots" '
        f'aria-label="free {word}, front first">{free_list}</ol>'
        f'<div class="usage" data-testid="sizes" data-evictable="{snapshot.evictable_size}" '
        f'data-protected="{snapshot.protected_size}" data-free="{len(snapshot.free_slots)}" '
        f'data-tree="{snapshot.tree_tokens}">'
        f"{code_term('evictable-leaf', 'evictable_size')} <b>{snapshot.evictable_size:,}</b> · "
        f"{code_term('lock-ref', 'protected_size')} <b>{snapshot.protected_size:,}</b> · "
        f"free <b>{len(snapshot.free_slots):,}</b> slots · held by requests <b>{held:,}</b> "
        f"{unit_word(page_size, held)} (not in the tree)</div>",
        ' data-testid="kv-slots"',
    )
