"""SGLang's counters up to this step (in tokens, as vLLM's panel: metrics.py) and the
step's KV events, one line each: a page-size-1 tree stores one hash per token, so an
event's hashes are counted, not listed."""

from __future__ import annotations

from app.render.glossary import term
from app.render.html import esc
from app.render.metrics import metric, percent, ratio
from app.render.sglang_common import span_text, unit_word
from engine.lab.play.records import EventRecord
from engine.lab.play.sglang.timeline import SGLangTimeline


def _event(event: EventRecord, page_size: int) -> str:
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
    attrs = (
        f'data-queries="{c.queries}" data-hits="{c.hits}" '
        f'data-hit-rate="{"" if hit_rate is None else f"{hit_rate:.6f}"}" '
        f'data-evicted-tokens="{c.evicted_tokens}" data-evicted-nodes="{c.evicted_nodes}" '
        f'data-splits="{c.splits}" data-resets="{c.resets}"'
    )
    cells = "".join(
        (
            metric("prompt tokens", f"{c.queries:,}", "prompt tokens of the requests admitted"),
            metric(
                "hit tokens",
                f"{c.hits:,}",
                "their matched prefix at admission (prefix_len, at most the prompt less one)",
            ),
            metric("hit rate", percent(hit_rate), "hit tokens / prompt tokens"),
            metric(
                "evicted",
                f"{c.evicted_tokens:,} tokens · {c.evicted_nodes:,} nodes",
                "tokens (and nodes) evict() took from the tree",
            ),
            metric(
                term("split", "splits"), f"{c.splits:,}", "nodes cut in two by a match or insert"
            ),
            metric("flushes", f"{c.resets:,}", "flush_cache calls that went through"),
        )
    )
    events = "".join(_event(e, snapshot.page_size) for e in snapshot.events)
    body = events or '<li class="empty-note">no KV events at this step</li>'
    return (
        '<section class="box" aria-label="prefix-cache metrics">'
        '<h3 class="panel-title">Radix cache counters</h3>'
        f'<dl class="metrics" data-testid="metrics" {attrs}>{cells}</dl>'
        '<div class="note">In tokens since the start; a hit is what the tree held of a '
        "prompt when it was admitted.</div>"
        '<h3 class="panel-title" style="margin-top:8px">KV events of this step</h3>'
        f'<ul class="events" data-testid="events" aria-label="KV events">{body}</ul>'
        "</section>"
    )
