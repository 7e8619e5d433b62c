"""What the SGLang renderers share: folded spans of ids, and the state of each KV slot
(or page, when ``page_size > 1``) at a step, from the step's snapshot alone."""

from __future__ import annotations

from collections.abc import Sequence

from app.render.gaps import folded, runs_of
from engine.lab.play.sglang.snapshot import ROOT_ID, NodeRecord, SGLangSnapshot

# A span of more runs than this shows its first and last SPAN_EDGE runs, a count between:
# a 2,000-token node of scattered token ids stays one line.
SPAN_FOLD_FROM = 5
SPAN_EDGE = 2

# Slot (or page) states, each with the word shown beside its colour.
UNIT_STATES = {
    "free": "free",
    "held": "held by a request",
    "protected": "in the tree, protected",
    "evictable": "in the tree, evictable",
}


def run_text(run: range) -> str:
    return str(run.start) if len(run) == 1 else f"{run.start}..{run.stop - 1}"


def span_text(values: Sequence[int]) -> str:
    """``1..16,201..206``: runs of consecutive values in their order; a long list of runs
    folded to its ends (``1..4,9, … 40 more …, 97,99..120``)."""
    if not values:
        return "-"
    text = folded(
        runs_of(values, lambda _: 0, ()),
        lambda run: run_text(run) + ",",
        lambda count: f" … {count:,} more …, ",
        SPAN_EDGE,
        SPAN_FOLD_FROM,
    )
    return text.rstrip(",").replace(", …", " …")


def unit_word(page_size: int, count: int = 2) -> str:
    word = "slot" if page_size == 1 else "page"
    return word if count == 1 else word + "s"


def node_units(node: NodeRecord, page_size: int) -> tuple[int, ...]:
    """The node's KV slots, or its pages when ``page_size > 1``."""
    return node.pages if page_size > 1 else node.value


def unit_ids(snapshot: SGLangSnapshot) -> range:
    """Every slot of the pool (slot 0, SGLang's padded slot, is not one), or every page."""
    if snapshot.page_size == 1:
        return range(1, snapshot.num_slots + 1)
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
            slots = request.kv_row
            units = slots if page_size == 1 else {s // page_size for s in slots}
            states.update((u, "held") for u in units)
    for node in snapshot.nodes:
        if node.node_id != ROOT_ID:
            state = "protected" if node.lock_ref > 0 else "evictable"
            states.update((u, state) for u in node_units(node, page_size))
    return states
