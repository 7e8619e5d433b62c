"""SGLang's radix tree at a step: every node with its token span, its KV slots (pages
when ``page_size > 1``), ``lock_ref`` and last access; the evictable leaves, the
protected nodes, the ``extra_key`` namespaces under the root; what the step did (the
path its matches walked, the node a split made, the nodes inserted and evicted).

One flat list with ``role="tree"``: each node a ``treeitem`` with its ``aria-level``,
indented by depth (capped, so a deep tree never scrolls sideways). Every state is a
word as well as a colour. A large tree folds: past MAX_NODES, the nodes the step
touched and their ancestors are kept, then the nodes nearest the root; the children
left out of a node are one line with a count, and a long chain of single children
is one line too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from app.render.gaps import folded, runs_of
from app.render.glossary import marked_terms, panel_texts, said, term
from app.render.html import changed_at, esc, legend, panel, plural
from engine.lab.play.sglang.narration import node_label
from engine.lab.play.sglang.snapshot import ROOT_ID, NodeRecord, SGLangSnapshot
from engine.lab.play.sglang.timeline import SGLangTimeline

# At most this many nodes are drawn (every built-in scenario's tree is far below).
MAX_NODES = 60
# Past this many children, a node shows its first and last SIBLING_EDGE children and
# the ones the step marked, with a count of the others between.
SIBLINGS_FULL = 8
SIBLING_EDGE = 3
# A run of at least this many single-child nodes (none split, cut or inserted at the
# step) is drawn as its first node, one line for the middle, and its last node.
CHAIN_FOLD_FROM = 5
# The walks whose path is "the path the step's match walked".
MATCH_PHASES = ("priority", "admit")
# A span of more runs than this shows its first and last SPAN_EDGE runs, a count between:
# a 2,000-token node of scattered token ids stays one line.
SPAN_FOLD_FROM = 5
SPAN_EDGE = 2


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
    return ("slot" if page_size == 1 else "page") + plural(count)


def node_units(node: NodeRecord, page_size: int) -> tuple[int, ...]:
    """The node's KV slots, or its pages when ``page_size > 1``."""
    return node.pages if page_size > 1 else node.value


# Each badge's word (a node's state, a mark's): the word is shown, so colour is never alone.
BADGES: dict[str, str] = panel_texts()["radix_tree"]["badges"]
# Mark -> the ids of the nodes the step marked so (only nodes in the snapshot matter).
TreeMarks = dict[str, set[int]]


def tree_marks(timeline: SGLangTimeline, step: int) -> TreeMarks:
    facts = timeline.steps[step].facts
    return {
        "walked": {n for w in facts.walks if w.phase in MATCH_PHASES for n in w.path},
        "split": set(facts.split_nodes),
        "cut": {s.child for s in facts.splits},
        "inserted": set(facts.inserted),
        "changed": changed_at(timeline, step, lambda s: s.nodes, lambda n: n.node_id),
    }


def shown_nodes(snapshot: SGLangSnapshot, keep: set[int]) -> set[int]:
    """The nodes to draw: all of a small tree; of a large one, ``keep`` and their
    ancestors, then the nodes nearest the root (each node's first and last children)
    up to MAX_NODES."""
    if len(snapshot.nodes) <= MAX_NODES:
        return {n.node_id for n in snapshot.nodes}
    parent = {n.node_id: n.parent for n in snapshot.nodes}
    children = children_of(snapshot)
    shown = {ROOT_ID}
    for node_id in keep:
        current: int | None = node_id
        while current is not None and current in parent and current not in shown:
            shown.add(current)
            current = parent[current]
    frontier = [ROOT_ID]
    while frontier and len(shown) < MAX_NODES:
        following: list[int] = []
        for node_id in frontier:
            kids = children.get(node_id, [])
            edge = kids[:SIBLING_EDGE] + kids[-SIBLING_EDGE:] if len(kids) > SIBLINGS_FULL else kids
            for kid in dict.fromkeys(edge):
                if len(shown) >= MAX_NODES:
                    break
                shown.add(kid)
            following.extend(k for k in kids if k in shown)
        frontier = following
    return shown


def children_of(snapshot: SGLangSnapshot) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for node in snapshot.nodes:
        if node.parent is not None:
            children.setdefault(node.parent, []).append(node.node_id)
    return children


@dataclass(frozen=True)
class Row:
    """One line of the drawn tree: a node, or a fold (a count of nodes not drawn)."""

    level: int  # aria-level: the root is 1
    node: NodeRecord | None = None
    hidden: tuple[int, ...] = ()  # a fold: the nodes it stands for (subtrees included)
    kind: str = ""  # a fold: "children" or "chain"
    namespace: str | None = None  # a namespace heading: the extra_key


def _subtree(node_id: int, children: dict[int, list[int]]) -> list[int]:
    out, stack = [], [node_id]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(children.get(current, []))
    return out


def tree_rows(snapshot: SGLangSnapshot, shown: set[int], marked: set[int]) -> Iterator[Row]:
    """The lines to draw, depth first in the tree's order."""
    nodes = {n.node_id: n for n in snapshot.nodes}
    children = children_of(snapshot)

    def chain_from(node_id: int) -> list[int]:
        """Unmarked single-child nodes from ``node_id`` down, all drawn."""
        chain = [node_id]
        while True:
            kids = children.get(chain[-1], [])
            if len(kids) != 1 or kids[0] not in shown or kids[0] in marked:
                return chain
            chain.append(kids[0])

    def visit(node_id: int, level: int) -> Iterator[Row]:
        chain = chain_from(node_id) if node_id not in marked and node_id != ROOT_ID else []
        if len(chain) >= CHAIN_FOLD_FROM:
            yield Row(level, nodes[chain[0]])
            yield Row(level + 1, hidden=tuple(chain[1:-1]), kind="chain")
            yield from visit_below(chain[-1], level + len(chain) - 1)
            return
        yield from visit_below(node_id, level)

    def visit_below(node_id: int, level: int) -> Iterator[Row]:
        yield Row(level, nodes[node_id])
        namespace: str | None = None
        hidden: list[int] = []
        for kid in children.get(node_id, []):
            if kid not in shown:
                hidden.extend(_subtree(kid, children))
                continue
            if hidden:
                yield Row(level + 1, hidden=tuple(hidden), kind="children")
                hidden = []
            key = nodes[kid].extra_key
            if node_id == ROOT_ID and key is not None and key != namespace:
                namespace = key
                yield Row(level + 1, namespace=key)
            yield from visit(kid, level + 1)
        if hidden:
            yield Row(level + 1, hidden=tuple(hidden), kind="children")

    yield from visit(ROOT_ID, 1)


def extra_key_tag(key: str | None) -> str:
    """The extra_key a node or a request is under, if any."""
    return "" if key is None else f' <span class="ns-tag">extra_key <b>{esc(key)}</b></span>'


def _node_row(node: NodeRecord, level: int, marks: tuple[str, ...], page_size: int) -> str:
    root = node.node_id == ROOT_ID
    label = node_label(node.node_id)
    units = node_units(node, page_size)
    protected = node.lock_ref > 0 and not root
    lock_state = ("evictable",) if node.evictable_leaf else ("protected",) if protected else ()
    states = [(b, BADGES[b]) for b in (*lock_state, *marks)]
    badges = "".join(f'<span class="badge b-{k}">{esc(w)}</span>' for k, w in states)
    # the namespace is said once, on the top node of its subtree (and to screen readers
    # on every node)
    namespace = extra_key_tag(node.extra_key) if node.parent == ROOT_ID else ""
    if root:
        body = (
            '<span class="nid">root</span> <span class="fact">lock_ref '
            f"<b>{node.lock_ref}</b></span> <span class=muted>always locked, never evicted</span>"
        )
        spoken = f"root, lock_ref {node.lock_ref}"
    else:
        word = unit_word(page_size, len(units))
        body = (
            f'<span class="nid">{label}</span>'
            '<span class="fact toks">tokens '
            f'<span class="mono">[{esc(span_text(node.token_ids))}]</span> '
            f"<span class=muted>({node.num_tokens})</span></span>"
            f'<span class="fact">{word} <span class="mono">[{esc(span_text(units))}]</span></span>'
            f'<span class="fact">lock_ref <b>{node.lock_ref}</b></span>'
            f'<span class="fact muted">access {node.last_access_time}</span>'
        )
        spoken = (
            f"{label}, {node.num_tokens} tokens, {len(units)} {word}, lock_ref {node.lock_ref}"
            + (f", extra_key {node.extra_key}" if node.extra_key is not None else "")
            + "".join(f", {w}" for _, w in states)
        )
    classes = " ".join(["node", *(f"m-{m}" for m in marks), *lock_state])
    return (
        f'<li role="treeitem" aria-level="{level}" aria-label="{esc(spoken)}" '
        f'class="{classes}" style="--d:{level - 1}" data-node-id="{node.node_id}" '
        f'data-parent="{"" if node.parent is None else node.parent}" '
        f'data-lock-ref="{node.lock_ref}" data-access="{node.last_access_time}" '
        f'data-tokens="{node.num_tokens}" data-units="{" ".join(map(str, units))}" '
        f'data-evictable="{str(node.evictable_leaf).lower()}" '
        f'data-marks="{" ".join(marks)}">'
        f'<span class="row">{body}{namespace}{badges}</span></li>'
    )


def _fold_row(row: Row, tokens: int, walked: int, changed: int) -> str:
    """A line for nodes not drawn; ``walked``, ``changed``: how many of them the step's
    match walked, and how many changed at the step."""
    count = len(row.hidden)
    # the children's line says how many changed at the step; the chain's, how many it walked
    also = changed if row.kind == "children" else walked
    said_also = f", {said(f'radix_tree.{row.kind}_also', n=also)}" if also else ""
    what = said(
        f"radix_tree.{row.kind}", count=count, s=plural(count), tokens=tokens, also=said_also
    )
    return (
        f'<li role="treeitem" aria-level="{row.level}" class="fold{" m-walked" if walked else ""}" '
        f'style="--d:{row.level - 1}" data-fold="{row.kind}" data-hidden="{count}" '
        f'data-walked="{walked}">{what}</li>'
    )


def render_radix_tree(timeline: SGLangTimeline, step: int) -> str:
    current = timeline.steps[step]
    snapshot = current.snapshot
    marks = tree_marks(timeline, step)
    nodes = {n.node_id: n for n in snapshot.nodes}
    touched = {*marks["walked"], *marks["split"], *marks["cut"], *marks["inserted"]} & set(nodes)
    shown = shown_nodes(snapshot, touched)
    items = []
    # a chain of single children folds, the match path's too (its ends are drawn); a node
    # split, cut or inserted at the step never folds
    for row in tree_rows(snapshot, shown, {*marks["split"], *marks["cut"], *marks["inserted"]}):
        if row.namespace is not None:
            items.append(
                f'<li role="none" class="ns" style="--d:{row.level - 1}" '
                f'data-namespace="{esc(row.namespace)}">namespace {term("extra-key")} = '
                f"<b>{esc(row.namespace)}</b></li>"
            )
        elif row.node is None:
            tokens = sum(nodes[n].num_tokens for n in row.hidden)
            walked = sum(1 for n in row.hidden if n in marks["walked"])
            changed = sum(1 for n in row.hidden if n in marks["changed"])
            items.append(_fold_row(row, tokens, walked, changed))
        else:
            node_marks = tuple(m for m, ids in marks.items() if row.node.node_id in ids)
            items.append(_node_row(row.node, row.level, node_marks, snapshot.page_size))
    evicted = "".join(
        f'<li data-evicted="{e.node}">{node_label(e.node)}: {e.tokens} tokens, '
        f"{unit_word(1, len(e.slots))} [{esc(span_text(e.slots))}] back to the pool</li>"
        for e in current.facts.evictions
    )
    evicted_note = (
        f'<div class="note evicted-note" data-testid="evicted">{said("radix_tree.evicted")} '
        f"<ul>{evicted}</ul></div>"
        if evicted
        else ""
    )
    count, drawn = len(snapshot.nodes) - 1, len(shown) - 1
    fold_note = f" · {said('radix_tree.drawn', drawn=drawn)}" if drawn < count else ""
    tokens = snapshot.tree_tokens
    title = said("radix_tree.title", nodes=count, s=plural(count), tokens=tokens, drawn=fold_note)
    return panel(
        "radix tree",
        title,
        f'<div class="tree-scroll"><ul class="rtree" role="tree" '
        f'aria-label="radix tree, root first, depth first">{"".join(items)}</ul></div>'
        + evicted_note
        + legend(map(marked_terms, panel_texts()["radix_tree"]["legend"]), "legend tree-legend"),
        ' data-testid="radix-tree"',
    )
