"""Requests: id, status, computed tokens, blocks, preemptions; then running and waiting."""

from __future__ import annotations

from collections.abc import Mapping

from app.render.glossary import term
from app.render.html import changed_at, esc
from engine.lab.snapshot import RequestRecord
from engine.lab.timeline import Timeline


def _row(request: RequestRecord, states: Mapping[int, str], changed: bool) -> str:
    chips = (
        "".join(f'<span class="chip state-{states[b]}">#{b}</span>' for b in request.block_ids)
        or '<span class="empty-note">none</span>'
    )
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
    rows = (
        "".join(_row(r, states, r.request_id in changed) for r in snapshot.requests)
        or '<tr><td colspan="6" class="empty-note">no requests yet</td></tr>'
    )
    running = ", ".join(snapshot.running) or "none"
    waiting = ", ".join(snapshot.waiting) or "none"
    stats = snapshot.stats
    return (
        f'<section class="box" aria-label="requests">'
        '<h3 class="panel-title">Requests</h3>'
        '<div class="table-scroll"><table class="compact" data-testid="requests"><thead><tr>'
        '<th>id</th><th>status</th><th title="num_computed_tokens / num_tokens">computed</th>'
        '<th class="wide-only" title="prefix-cache hit at admission, in tokens">cached</th>'
        "<th>blocks</th>"
        f'<th title="num_preemptions">{term("preemption", "preempted")}</th>'
        f"</tr></thead><tbody>{rows}</tbody></table></div>"
        '<div class="queues"><span data-testid="running">'
        f"<strong>running:</strong> {esc(running)}</span>"
        f' · <span data-testid="waiting"><strong>waiting:</strong> {esc(waiting)}</span>'
        f" · prefix-cache hits {stats.hits} of {stats.queries} tokens queried</div>"
        "</section>"
    )
