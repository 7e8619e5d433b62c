"""The header of an SGLang timeline: whose prefix cache this is (SGLang's RadixCache),
how big and how it is set, for the full page and for the embed (header.py's pieces)."""

from __future__ import annotations

from app.render.glossary import code_term, term
from app.render.header import KEYS, embed_header, page_header
from app.render.html import esc
from engine.lab.play.sglang.timeline import SGLangTimeline

HOW_TO_READ = (
    f"The {term('radix-tree')} is SGLang's prefix cache: each {term('node')} holds a run of "
    "tokens (its span, folded as [1..16] (16)) and the KV slots that hold them; reading "
    "from the root down spells a cached prefix. Requests under another "
    f"{code_term('extra-key')} get their own subtree under the root.",
    f"{code_term('lock-ref')} counts the running requests holding a node: above 0 it is "
    f"protected; at 0 a node without children is an {term('evictable-leaf')}, which "
    "evict() takes least recently used first.",
    "A step's match path is marked matched; where a match ends inside a node, a "
    f"{term('split')} cuts it and the new upper node is marked split here. Nodes inserted "
    "or changed at the step say so.",
    "The KV slot pool shows each slot in the tree, held by a request or free; the free list "
    f"is in the allocator's order, the front taken first (pages when {term('page-size')} "
    "is above 1).",
    "The code panel shows the model's own source: lines that ran at this step are "
    "highlighted, ▶ marks the last one.",
    KEYS,
)


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
