"""The glossary (content/glossary.toml): each term's definition, where the page uses it.

A view writes `term("ref_cnt")` where it first uses a term: a link whose tooltip
is the definition and whose click opens the glossary panel at that entry
(glossary.js; plain HTML, so it works before Python is ready too). Definitions
follow vLLM 0.33.0; all text is escaped here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from app.content_files import load_toml, one_line
from app.render.html import esc

ANCHOR_PREFIX = "term-"


@dataclass(frozen=True)
class Term:
    key: str
    term: str
    text: str


@cache
def glossary() -> dict[str, Term]:
    """Key -> term, in the file's order."""
    terms = [
        Term(str(t["key"]), one_line(t["term"]), one_line(t["text"]))
        for t in load_toml("glossary.toml")["term"]
    ]
    return {t.key: t for t in terms}


def term(key: str, text: str | None = None) -> str:
    """The term as a link to its definition (text defaults to the term as vLLM writes it)."""
    entry = glossary()[key]  # a KeyError names a term missing from the glossary
    shown = entry.term if text is None else text
    return (
        f'<a class="term" href="#{ANCHOR_PREFIX}{esc(key)}" data-term="{esc(key)}" '
        f'title="{esc(entry.text)}">{esc(shown)}</a>'
    )


def code_term(key: str, text: str | None = None) -> str:
    """A term that is a name in vLLM's code, shown as code."""
    return f"<code>{term(key, text)}</code>"


def render_glossary(open_: bool = False) -> str:
    items = "".join(
        f'<dt id="{ANCHOR_PREFIX}{esc(t.key)}" data-term-entry="{esc(t.key)}" tabindex="-1">'
        f"{esc(t.term)}</dt><dd>{esc(t.text)}</dd>"
        for t in glossary().values()
    )
    return (
        f'<details class="glossary" data-testid="glossary"{" open" if open_ else ""}>'
        "<summary>Glossary</summary>"
        f"<dl>{items}</dl></details>"
    )
