"""Which pure render fills each view's deck, by the deck's name in the document.

A StepView's deck is named after its class (app/views/base.py takes its `render` from
here); the hash chain's and the prefill calculator's are named after their part, and
here are drawn as they open, before the learner picks (their views re-render on a
pick). Both the App's sender and the static site's worker (app/data/early_playground.py,
which has no Panel) render a page's decks from this one table.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.render.chain import render_chain_picked
from app.render.engines import AnyRender, per_engine
from app.render.header import (
    render_embed_header,
    render_header,
    render_sglang_embed_header,
    render_sglang_header,
)
from app.render.kv_slots import render_kv_slots
from app.render.metrics import render_metrics, render_sglang_metrics
from app.render.narration import render_log, render_narration, render_narration_on_path
from app.render.pool import render_hash_map, render_offload, render_pool
from app.render.prefill import follow_page, model_texts
from app.render.queue import render_queue
from app.render.radix_tree import render_radix_tree
from app.render.requests import render_requests, render_sglang_requests
from engine.lab.play.vllm.timeline import Timeline

# The decks of the hash chain and the prefill calculator (app/views/chain.py, prefill.py).
CHAIN, PREFILL = "chain", "prefill"


def render_prefill_followed(timeline: Timeline, step: int) -> str:
    """The prefill calculator before the learner types: the step's request."""
    return follow_page(timeline, step, model_texts())


DECKS: dict[str, AnyRender] = {
    "HeaderView": per_engine(render_header, render_sglang_header),
    "EmbedHeaderView": per_engine(render_embed_header, render_sglang_embed_header),
    "PoolView": per_engine(render_pool, render_kv_slots),
    "OffloadView": per_engine(render_offload),
    "QueueView": per_engine(render_queue),
    "HashMapView": per_engine(render_hash_map, render_radix_tree),
    "RequestsView": per_engine(render_requests, render_sglang_requests),
    "MetricsView": per_engine(render_metrics, render_sglang_metrics),
    "LogView": render_log,
    "NarrationView": render_narration,
    CHAIN: per_engine(render_chain_picked),  # none on SGLang
    PREFILL: per_engine(render_prefill_followed),
}
# The full page's own: its narration's last step offers the next scenario on the path
# (the embed stays on its one scenario, the write-up's figure).
ON_THE_FULL_PAGE: dict[str, AnyRender] = {"NarrationView": render_narration_on_path}


def deck_render(name: str, compact: bool) -> AnyRender:
    """The render of the deck ``name`` in a layout (``compact``: the embed's)."""
    return DECKS[name] if compact else ON_THE_FULL_PAGE.get(name, DECKS[name])


def deck_renders(names: Iterable[str], compact: bool) -> dict[str, AnyRender]:
    """Name -> render of each deck of a page."""
    return {name: deck_render(name, compact) for name in names}
