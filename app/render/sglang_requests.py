"""SGLang's requests at a step: each with its status, tokens, hit at admission, the
match depth lpm ranks it by, the node it locks and its row of KV slots; then who
runs and who waits, in the policy's order (the vLLM panel's frame, requests.py)."""

from __future__ import annotations

from app.render.glossary import panel_texts
from app.render.html import changed_at, esc
from app.render.requests import requests_box
from app.render.sglang_common import span_text
from engine.lab.play.sglang.narration import node_label
from engine.lab.play.sglang.snapshot import SGLangRequestRecord
from engine.lab.play.sglang.timeline import SGLangTimeline

# Status word -> the class the vLLM panel colours it with (RUNNING, WAITING, FINISHED_*).
STATUS_CLASS = {"running": "RUNNING", "waiting": "WAITING", "finished": "FINISHED_LENGTH_CAPPED"}


def _row(request: SGLangRequestRecord, changed: bool, nodes: set[int]) -> str:
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
    namespace = (
        f' <span class="ns-tag">extra_key <b>{esc(request.extra_key)}</b></span>'
        if request.extra_key is not None
        else ""
    )
    return (
        f'<tr data-request-id="{esc(request.request_id)}" data-status="{esc(request.status)}" '
        f'data-hit="{request.hit_tokens}" data-matched="{request.num_matched_prefix_tokens}" '
        f'data-node="{"" if node is None else node}" '
        f'data-locked="{"" if request.locked_node is None else request.locked_node}" '
        f'data-slots="{" ".join(map(str, request.kv_row))}"'
        f"{' class=changed' if changed else ''}>"
        f"<td><b>{esc(request.request_id)}</b>{namespace}</td>"
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
    rows = "".join(_row(r, r.request_id in changed, nodes) for r in snapshot.requests)
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
