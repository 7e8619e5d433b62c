"""The header of an SGLang timeline: whose prefix cache this is (SGLang's RadixCache),
how big and how it is set, for the full page and for the embed (header.py's pieces)."""

from __future__ import annotations

from app.render.glossary import marked_terms, panel_texts
from app.render.header import KEYS, embed_header, page_header
from app.render.html import esc
from engine.lab.play.sglang.timeline import SGLangTimeline

HOW_TO_READ = (*map(marked_terms, panel_texts()["sglang"]["how_to_read"]), KEYS)


def kicker(timeline: SGLangTimeline) -> str:
    """ "SGLang's prefix cache · RadixCache of 60 KV slots · page size 1" (HTML)."""
    return esc(
        f"SGLang's prefix cache · RadixCache of {timeline.num_slots:,} KV slots · "
        f"page size {timeline.page_size}"
    )


def summary(timeline: SGLangTimeline) -> str:
    """The SGLang narration's ``tagline``, else the scenario summary's first sentence
    (its others tell vLLM's side: "walks its block hashes")."""
    tagline = dict(timeline.narration).get("tagline")
    if tagline:
        return " ".join(tagline.split())
    first, dot, _ = " ".join(timeline.summary.split()).partition(". ")
    return first + (dot.strip() if dot else "")


def render_sglang_header(timeline: SGLangTimeline, step: int) -> str:
    engine = (
        f"SGLang 0.5.23 RadixCache · {timeline.mode} · page size {timeline.page_size} · "
        f"{timeline.eviction_policy} eviction"
    )
    return page_header(engine, timeline.title, summary(timeline), HOW_TO_READ, timeline.scenario)


def render_sglang_embed_header(timeline: SGLangTimeline, step: int) -> str:
    return embed_header(kicker(timeline), timeline.title, summary(timeline), timeline.narration)
