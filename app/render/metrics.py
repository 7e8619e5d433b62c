"""vLLM's prefix-cache counters (in tokens) up to this step, and this step's KV events."""

from __future__ import annotations

from app.render.glossary import term
from app.render.html import esc
from engine.lab.play.vllm.event_labels import event_hash_labels, event_hashes, event_label
from engine.lab.play.vllm.timeline import Timeline

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


def metric(label: str, value: str, hint: str) -> str:
    return f'<div class="metric" title="{esc(hint)}"><dt>{label}</dt><dd>{value}</dd></div>'


def rate(value: float | None) -> str:
    """A ratio as a data- attribute: empty when there is none."""
    return "" if value is None else f"{value:.6f}"


def metrics_box(
    title: str,
    data: dict[str, object],
    cells: tuple[tuple[str, str, str], ...],
    note: str,
    events: str,
) -> str:
    """The counters panel of either engine: ``data`` as the counters' data- attributes,
    a metric per (label, value, hint) of ``cells``, a ``note`` and the step's KV
    ``events`` (HTML list items)."""
    attrs = " ".join(f'data-{key}="{value}"' for key, value in data.items())
    body = events or '<li class="empty-note">no KV events at this step</li>'
    return (
        '<section class="box" aria-label="prefix-cache metrics">'
        f'<h3 class="panel-title">{title}</h3>'
        f'<dl class="metrics" data-testid="metrics" {attrs}>{"".join(metric(*c) for c in cells)}'
        f'</dl><div class="note">{note}</div>'
        '<h3 class="panel-title" style="margin-top:8px">KV events of this step</h3>'
        f'<ul class="events" data-testid="events" aria-label="KV events">{body}</ul>'
        "</section>"
    )


def event_type(name: str) -> str:
    """The event's type, linked to its glossary entry when it has one."""
    key = EVENT_TERMS.get(name)
    return term(key, name) if key else esc(name)


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
        items.append(
            f'<li class="ev ev-{esc(event.type)}" data-type="{esc(event.type)}" '
            f'data-hashes="{esc(" ".join(shown))}">'
            f"<b>{event_type(event.type)}</b>{where} {chips}</li>"
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
    cells = (
        (
            term("prefix-cache-counters", "prefix_cache_queries"),
            f"{stats.queries:,}",
            "tokens of newly admitted requests (num_tokens each)",
        ),
        (
            "prefix_cache_hits",
            f"{stats.hits:,}",
            "tokens those requests reused from the cache (num_cached_tokens each)",
        ),
        ("hit rate", percent(hit_rate), "hits / queries"),
        ("preempted_requests", f"{stats.preempted_requests:,}", "resumed after preemption"),
        (
            "preempted hits / queries",
            f"{stats.preempted_hits:,} / {stats.preempted_queries:,}",
            "tokens of resumed requests",
        ),
        (
            "survival fraction",
            percent(survival),
            "preempted_hits / preempted_queries: how much of a preempted request's "
            "KV was still cached when it resumed",
        ),
        ("resets", f"{stats.resets:,}", "successful prefix-cache resets"),
    )
    note = (
        f"Counters in tokens since the start ({stats.requests} new "
        f"request{'' if stats.requests == 1 else 's'}); a request with "
        f"{term('skip-reading-prefix-cache')} set skips the lookup and counts in neither."
    )
    return metrics_box("Prefix-cache metrics", data, cells, note, render_events(timeline, step))
