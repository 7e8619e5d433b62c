"""Requests: id, status, computed tokens, blocks, preemptions; then running and waiting.

SGLang's: each with its status, tokens, hit at admission, the match depth lpm ranks it
by, the node it locks and its row of KV slots; who waits is in the policy's order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.render.gaps import folded, runs_of
from app.render.glossary import marked_terms, panel_texts
from app.render.html import changed_at, esc, panel, table
from app.render.radix_tree import extra_key_tag, span_text
from engine.lab.play.sglang.narration import node_label
from engine.lab.play.sglang.snapshot import SGLangRequestRecord
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.snapshot import RequestRecord
from engine.lab.play.vllm.timeline import Timeline

# A request's block list longer than this is folded as the pool and the free queue fold
# theirs: runs of consecutive blocks in one state as one chip ("#1 to #512"), and if still
# long, the first and last EDGE chips with a count between (a 50,000-token prompt holds
# over a thousand blocks).
FOLD_FROM = 16
EDGE = 8
# SGLang's status word -> the class the vLLM panel colours it with (RUNNING, WAITING, ...).
STATUS_CLASS = {"running": "RUNNING", "waiting": "WAITING", "finished": "FINISHED_LENGTH_CAPPED"}


def _chip(run: range, states: Mapping[int, str]) -> str:
    first, last = run.start, run.stop - 1
    state = states[first]
    if first == last:
        return f'<span class="chip state-{state}">#{first}</span>'
    return (
        f'<span class="chip run state-{state}" data-first="{first}" data-last="{last}" '
        f'title="#{first} to #{last}: {len(run):,} blocks, {esc(state)}">'
        f"#{first} to #{last}</span>"
    )


def block_chips(block_ids: Sequence[int], states: Mapping[int, str]) -> str:
    """A request's blocks, each a chip; a long list folded (FOLD_FROM)."""
    if not block_ids:
        return '<span class="empty-note">none</span>'
    if len(block_ids) <= FOLD_FROM:
        return "".join(_chip(range(b, b + 1), states) for b in block_ids)
    return folded(
        runs_of(block_ids, lambda b: states[b], ()),
        lambda run: _chip(run, states),
        lambda blocks: (
            f'<span class="chip gap" data-gap="{blocks}" title="{blocks:,} blocks not shown">'
            f"… {blocks:,} more …</span>"
        ),
        EDGE,
    )


def _row(request: RequestRecord, states: Mapping[int, str], changed: bool) -> str:
    chips = block_chips(request.block_ids, states)
    # <wbr> lets long statuses (finished_length_capped) wrap on a phone.
    status_text = esc(request.status.lower()).replace("_", "_<wbr>")
    cached = "—" if request.num_cached_tokens < 0 else str(request.num_cached_tokens)
    return (
        f'<tr data-request-id="{esc(request.request_id)}" data-status="{esc(request.status)}" '
        f'data-computed="{request.num_computed_tokens}" '
        f'data-preemptions="{request.num_preemptions}" '
        f'data-block-ids="{" ".join(str(b) for b in request.block_ids)}"'
        f"{' class=changed' if changed else ''}>"
        f"<td><b>{esc(request.request_id)}</b></td>"
        f'<td><span class="status {esc(request.status)}">{status_text}</span></td>'
        f'<td class="num">{request.num_computed_tokens} / {request.num_tokens}</td>'
        f'<td class="num wide-only">{cached}</td>'
        f"<td>{chips}</td>"
        f'<td class="num">{request.num_preemptions}</td></tr>'
    )


def render_requests(timeline: Timeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    states = {b.block_id: b.state for b in snapshot.blocks}
    changed = changed_at(timeline, step, lambda s: s.requests, lambda r: r.request_id)
    rows = "".join(_row(r, states, r.request_id in changed) for r in snapshot.requests)
    stats = snapshot.stats
    return requests_box("vllm", rows, snapshot.running, snapshot.waiting, stats.hits, stats.queries)


def requests_box(
    engine: str,
    rows: str,
    running: Sequence[str],
    waiting: Sequence[str],
    hits: int,
    queries: int,
    after: str = "",
) -> str:
    """The requests panel of ``engine``: a table (its header from content/panels.toml),
    then who runs and who waits, in the queue's order, the hits so far, and ``after``."""
    head = panel_texts()["requests"][engine]
    empty = f'<tr><td colspan="{len(head)}" class="empty-note">no requests yet</td></tr>'
    requests = table(marked_terms("".join(head)), rows or empty, ' data-testid="requests"')
    return panel(
        "requests",
        "Requests",
        f'<div class="table-scroll">{requests}</div>'
        '<div class="queues"><span data-testid="running">'
        f"<strong>running:</strong> {esc(', '.join(running) or 'none')}</span>"
        ' · <span data-testid="waiting"><strong>waiting:</strong> '
        f"{esc(', '.join(waiting) or 'none')}</span>"
        f" · prefix-cache hits {hits} of {queries} tokens queried</div>{after}",
    )


def _sglang_row(request: SGLangRequestRecord, changed: bool, nodes: set[int]) -> str:
    """``nodes``: the ids in the tree now (a finished request's node may be evicted)."""
    hit = "—" if request.hit_tokens < 0 else str(request.hit_tokens)
    node = request.locked_node if request.locked_node is not None else request.last_node
    node_text = "—" if node is None else node_label(node)
    if request.locked_node is not None:
        node_text += " <span class=muted>(locked)</span>"
    elif node is not None and node not in nodes:
        node_text += " <span class=muted>(evicted)</span>"
    tree = request.kv_row[: request.cache_protected_len]
    own = request.kv_row[request.cache_protected_len :]
    slots = " + ".join(
        f'<span class="mono">[{esc(span_text(part)).replace(",", ",<wbr>")}]</span> '
        f"<span class=muted>{what}</span>"
        for part, what in ((tree, "tree"), (own, "own"))
        if part
    )
    return (
        f'<tr data-request-id="{esc(request.request_id)}" data-status="{esc(request.status)}" '
        f'data-hit="{request.hit_tokens}" data-matched="{request.num_matched_prefix_tokens}" '
        f'data-node="{"" if node is None else node}" '
        f'data-locked="{"" if request.locked_node is None else request.locked_node}" '
        f'data-slots="{" ".join(map(str, request.kv_row))}"'
        f"{' class=changed' if changed else ''}>"
        f"<td><b>{esc(request.request_id)}</b>{extra_key_tag(request.extra_key)}</td>"
        f'<td><span class="status {STATUS_CLASS[request.status]}">{esc(request.status)}</span></td>'
        f'<td class="num nowrap">{request.num_prompt_tokens} + {request.num_output_tokens}</td>'
        f'<td class="num">{hit}</td>'
        f'<td class="num wide-only">{request.num_matched_prefix_tokens}</td>'
        f"<td>{node_text}</td>"
        f"<td>{slots or '<span class=empty-note>none</span>'}</td></tr>"
    )


def render_sglang_requests(timeline: SGLangTimeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    changed = changed_at(timeline, step, lambda s: s.requests, lambda r: r.request_id)
    nodes = {n.node_id for n in snapshot.nodes}
    rows = "".join(_sglang_row(r, r.request_id in changed, nodes) for r in snapshot.requests)
    # lpm sorts the queue by match depth: each waiting request with its depth.
    depth = {r.request_id: r.num_matched_prefix_tokens for r in snapshot.requests}
    waiting = (
        [f"{rid} ({depth[rid]} matched)" for rid in snapshot.waiting]
        if timeline.mode == "lpm"
        else list(snapshot.waiting)
    )
    finished = ", ".join(snapshot.finished) or "none"
    order = panel_texts()["requests"]["order"][timeline.mode]
    after = (
        f'<div class="queues" data-testid="finished"><strong>finished:</strong> '
        f"{esc(finished)} · {order}</div>"
    )
    counters = snapshot.counters
    return requests_box(
        "sglang", rows, snapshot.running, waiting, counters.hits, counters.queries, after
    )
