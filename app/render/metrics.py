"""The prefix-cache counters (in tokens) up to this step, and this step's KV events: vLLM's,
and SGLang's, one line per event (a page-size-1 tree stores one hash per token, so an
event's hashes are counted, not listed)."""

from __future__ import annotations

from app.render.glossary import marked_terms, panel_texts, said, term
from app.render.html import esc, panel, plural
from app.render.radix_tree import span_text, unit_word
from engine.lab.play.records import EventRecord
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.event_labels import event_hash_labels, event_hashes, event_label
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.content import one_line

# KV event types -> their glossary entries.
EVENT_TERMS = {
    "BlockStored": "block-stored",
    "BlockRemoved": "block-removed",
    "AllBlocksCleared": "all-blocks-cleared",
}


def ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def rate(value: float | None) -> str:
    """A ratio as a data- attribute: empty when there is none."""
    return "" if value is None else f"{value:.6f}"


def metrics_box(
    engine: str,
    title: str,
    data: dict[str, object],
    values: tuple[str, ...],
    note: str,
    events: str,
) -> str:
    """The counters panel of ``engine``: ``data`` as the counters' data- attributes, a
    metric per value of ``values`` (its label and tooltip from content/panels.toml), a
    ``note`` and the step's KV ``events`` (HTML list items)."""
    attrs = " ".join(f'data-{key}="{value}"' for key, value in data.items())
    named = zip(panel_texts()["metrics"][engine], values, strict=True)
    cells = "".join(
        f'<div class="metric" title="{esc(one_line(hint))}"><dt>{marked_terms(label)}</dt>'
        f"<dd>{value}</dd></div>"
        for (label, hint), value in named
    )
    body = events or '<li class="empty-note">no KV events at this step</li>'
    return panel(
        "prefix-cache metrics",
        title,
        f'<dl class="metrics" data-testid="metrics" {attrs}>{cells}'
        f'</dl><div class="note">{note}</div>'
        '<h3 class="panel-title" style="margin-top:8px">KV events of this step</h3>'
        f'<ul class="events" data-testid="events" aria-label="KV events">{body}</ul>',
    )


def render_events(timeline: Timeline, step: int) -> str:
    events = timeline.steps[step].snapshot.events
    labels = event_hash_labels(timeline, step) if events else {}
    items = []
    for event in events:
        fields = dict(event.fields)
        shown = [event_label(h, labels) for h in event_hashes(event)]
        chips = "".join(
            f'<span class="chip mono" title="event hash {esc(h)}">{esc(label)}</span>'
            for h, label in zip(event_hashes(event), shown, strict=True)
        )
        medium = fields.get("medium")
        where = f' <span class="muted">{esc(medium)}</span>' if medium else ""
        key = EVENT_TERMS.get(event.type)  # the type, linked to its glossary entry if any
        kind = term(key, event.type) if key else esc(event.type)
        items.append(
            f'<li class="ev ev-{esc(event.type)}" data-type="{esc(event.type)}" '
            f'data-hashes="{esc(" ".join(shown))}">'
            f"<b>{kind}</b>{where} {chips}</li>"
        )
    return "".join(items)


def render_metrics(timeline: Timeline, step: int) -> str:
    stats = timeline.steps[step].snapshot.stats
    hit_rate = ratio(stats.hits, stats.queries)
    survival = ratio(stats.preempted_hits, stats.preempted_queries)
    data = {
        "requests": stats.requests,
        "queries": stats.queries,
        "hits": stats.hits,
        "hit-rate": rate(hit_rate),
        "preempted-requests": stats.preempted_requests,
        "preempted-queries": stats.preempted_queries,
        "preempted-hits": stats.preempted_hits,
        "survival": rate(survival),
        "resets": stats.resets,
    }
    values = (
        f"{stats.queries:,}",
        f"{stats.hits:,}",
        percent(hit_rate),
        f"{stats.preempted_requests:,}",
        f"{stats.preempted_hits:,} / {stats.preempted_queries:,}",
        percent(survival),
        f"{stats.resets:,}",
    )
    note = said("metrics.notes.vllm", requests=stats.requests, s=plural(stats.requests))
    events = render_events(timeline, step)
    return metrics_box("vllm", "Prefix-cache metrics", data, values, note, events)


def _sglang_event(event: EventRecord, page_size: int) -> str:
    fields = dict(event.fields)
    hashes = fields.get("block_hashes") or []
    parts = []
    if hashes:
        parts.append(f"{len(hashes)} {unit_word(page_size, len(hashes))}")
    tokens = fields.get("token_ids")
    if tokens:
        parts.append(f'tokens <span class="mono">[{esc(span_text(tokens))}]</span>')
    if event.type == "BlockStored":
        parent = fields.get("parent_block_hash")
        parts.append(
            "under the root"
            if parent is None
            else f'parent <span class="mono">{esc(parent)}</span>'
        )
    return (
        f'<li class="ev ev-{esc(event.type)}" data-type="{esc(event.type)}" '
        f'data-hashes="{len(hashes)}"><b>{esc(event.type)}</b> {" · ".join(parts)}</li>'
    )


def render_sglang_metrics(timeline: SGLangTimeline, step: int) -> str:
    snapshot = timeline.steps[step].snapshot
    c = snapshot.counters
    hit_rate = ratio(c.hits, c.queries)
    data = {
        "queries": c.queries,
        "hits": c.hits,
        "hit-rate": rate(hit_rate),
        "evicted-tokens": c.evicted_tokens,
        "evicted-nodes": c.evicted_nodes,
        "splits": c.splits,
        "resets": c.resets,
    }
    values = (
        f"{c.queries:,}",
        f"{c.hits:,}",
        percent(hit_rate),
        f"{c.evicted_tokens:,} tokens · {c.evicted_nodes:,} nodes",
        f"{c.splits:,}",
        f"{c.resets:,}",
    )
    note = said("metrics.notes.sglang")
    events = "".join(_sglang_event(e, snapshot.page_size) for e in snapshot.events)
    return metrics_box("sglang", "Radix cache counters", data, values, note, events)
