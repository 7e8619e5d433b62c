"""SGLang's counters up to this step (in tokens, as vLLM's panel: metrics.py) and the
step's KV events, one line each: a page-size-1 tree stores one hash per token, so an
event's hashes are counted, not listed."""

from __future__ import annotations

from app.render.html import esc
from app.render.metrics import metrics_box, percent, rate, ratio
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
    note = (
        "In tokens since the start; a hit is what the tree held of a prompt when it was admitted."
    )
    events = "".join(_event(e, snapshot.page_size) for e in snapshot.events)
    return metrics_box("sglang", "Radix cache counters", data, values, note, events)
