"""The header: which scenario this is, and a short "how to read this"; on an SGLang
timeline, whose prefix cache it is (SGLang's RadixCache), how big and how it is set."""

from __future__ import annotations

from functools import cache, lru_cache

from app.render.engines import AnyTimeline
from app.render.glossary import marked_terms, panel_texts, said
from app.render.html import esc
from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.timeline import Timeline

# The keyboard, as the player and keyboard.js take it (both engines' pages say it).
KEYS = marked_terms(panel_texts()["keys"])
# "How to read this", by the engine of the page's timeline.
HOW_TO_READ = {
    engine: (*map(marked_terms, panel_texts()[engine]["how_to_read"]), KEYS)
    for engine in ("vllm", "sglang")
}


@cache
def built_in_scenarios() -> tuple[tuple[str, str, str], ...]:
    """(name, title, summary) of every built-in scenario, read off its file once."""
    return tuple(
        (name, scenario.title, " ".join(scenario.summary.split()))
        for name in scenario_names()
        for scenario in [load_scenario(name)]
    )


@lru_cache(maxsize=64)
def scenario_list(current: str) -> str:
    """Every built-in scenario with its title and summary, each a deep link (the same at
    every step of a timeline, so made once: a tenth of a playground edit's rendering
    otherwise)."""
    items = []
    for name, title, summary in built_in_scenarios():
        here = ' aria-current="page" class="here"' if name == current else ""
        items.append(
            f'<li data-scenario="{esc(name)}"{here}><a href="?scenario={esc(name)}">'
            f'{esc(title)}</a> <span class="mono muted">{esc(name)}</span>'
            f"<br><span class=muted>{esc(summary)}</span></li>"
        )
    return (
        '<details class="scenarios"><summary>All scenarios</summary>'
        f'<ol data-testid="scenario-list">{"".join(items)}</ol></details>'
    )


def render_header(timeline: Timeline, step: int) -> str:
    return page_header(timeline, said("kicker.vllm"), timeline.summary)


def page_header(timeline: AnyTimeline, kicker: str, summary: str) -> str:
    """The full page's header for either engine (``kicker``: its last part)."""
    items = "".join(f"<li>{item}</li>" for item in HOW_TO_READ[timeline.engine])
    return (
        '<header class="header" data-testid="app-header">'
        '<div class="kicker"><a href="?" data-testid="start-link">Prefix Cache Lab</a>'
        f" · {esc(kicker)}</div>"
        f"<h1>{esc(timeline.title)}</h1>"
        f"<p>{esc(' '.join(summary.split()))}</p>"
        # Open on a first visit; the learner's choice is kept (remember_details.js).
        f'<details class="howto-box" data-remember="how-to-read" open><summary>'
        f'How to read this</summary><ul class="howto">{items}</ul></details>'
        f"{scenario_list(timeline.scenario)}"
        "</header>"
    )


def render_embed_header(timeline: Timeline, step: int) -> str:
    """The write-up's figure names itself: vLLM's prefix cache, the scenario's one line,
    and what its modes do, in the scenario's own words (its narration's ``tagline`` and
    ``modes``; the summary's first sentence where it has no tagline)."""
    kicker = said("kicker.vllm_embed", blocks=timeline.num_gpu_blocks)
    return embed_header(timeline, kicker, timeline.summary)


def embed_header(timeline: AnyTimeline, kicker: str, summary: str) -> str:
    """The embed's header for either engine: the kicker (HTML: whose prefix cache, how
    big), the title, the tagline and what the modes do."""
    texts = dict(timeline.narration)
    tagline = " ".join((texts.get("tagline") or summary.split(". ")[0]).split())
    # "mode: does this · mode: does that": each mode's name stands out.
    modes = " · ".join(
        f"<b>{esc(name)}</b>: {esc(rest)}"
        for part in " ".join(texts.get("modes", "").split()).split(" · ")
        if part
        for name, _, rest in [part.partition(": ")]
    )
    # One paragraph: the figure must fit its 800x900 frame at every step.
    return (
        '<div class="header embed-header" data-testid="embed-title">'
        f'<span class="kicker">{kicker}</span> · <b>{esc(timeline.title)}</b>'
        f'<p class="tagline">{esc(tagline)}'
        + (f' <span class="modes-said" data-testid="embed-modes">{modes}</span>' if modes else "")
        + "</p></div>"
    )


def sglang_summary(timeline: SGLangTimeline) -> str:
    """The SGLang narration's ``tagline``, else the scenario summary's first sentence
    (its others tell vLLM's side: "walks its block hashes")."""
    tagline = dict(timeline.narration).get("tagline")
    if tagline:
        return " ".join(tagline.split())
    first, dot, _ = " ".join(timeline.summary.split()).partition(". ")
    return first + (dot.strip() if dot else "")


def render_sglang_header(timeline: SGLangTimeline, step: int) -> str:
    policy, size = timeline.eviction_policy, timeline.page_size
    kicker = said("kicker.sglang", mode=timeline.mode, page_size=size, policy=policy)
    return page_header(timeline, kicker, sglang_summary(timeline))


def render_sglang_embed_header(timeline: SGLangTimeline, step: int) -> str:
    size = timeline.page_size
    kicker = esc(said("kicker.sglang_embed", slots=timeline.num_slots, page_size=size))
    return embed_header(timeline, kicker, sglang_summary(timeline))
