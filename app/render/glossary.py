"""The glossary (content/glossary.toml): each term's definition, where the page uses it.

A view writes `term("ref_cnt")` where it first uses a term: a link whose tooltip
is the definition and whose click opens the glossary panel at that entry
(glossary.js; plain HTML, so it works before Python is ready too). Prose from
content/ goes through `link_terms`, which links the first use of each term in it
(the term as written, or one of its `forms`). Definitions follow vLLM 0.33.0 (SGLang 0.5.23 for
the terms marked ``engine = "sglang"``); all
text is escaped here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from app.render.html import esc
from engine.lab.shared.content import load_toml, one_line

ANCHOR_PREFIX = "term-"
# Beside an SGLang term in the glossary panel: the definition is SGLang's.
SGLANG_TAG = ' <span class="muted">(SGLang)</span>'


@dataclass(frozen=True)
class Term:
    key: str
    term: str
    text: str
    forms: tuple[str, ...] = ()  # other ways prose writes it ("preempted", "free queue")
    engine: str = "vllm"  # whose semantics it defines: its prose is linked in that engine's


@cache
def glossary() -> dict[str, Term]:
    """Key -> term, in the file's order."""
    terms = [
        Term(
            str(t["key"]),
            one_line(t["term"]),
            one_line(t["text"]),
            tuple(str(f) for f in t.get("forms", ())),
            str(t.get("engine", "vllm")),
        )
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


@cache
def _forms(engine: str) -> tuple[re.Pattern[str], dict[str, str]]:
    """Every written form of every term of the engine (longest first, so "free queue"
    beats "free"), and the term each form belongs to, by its lower case."""
    key_of = {
        form.lower(): t.key
        for t in glossary().values()
        if t.engine == engine
        for form in (t.term, *t.forms)
    }
    alternatives = "|".join(re.escape(f) for f in sorted(key_of, key=len, reverse=True))
    return re.compile(rf"(?<![\w#-])(?:{alternatives})(?![\w-])", re.IGNORECASE), key_of


def link_terms(text: str, engine: str = "vllm") -> str:
    """Prose as HTML: escaped, with the first use of each of the engine's glossary terms
    linked (an SGLang text's "split" is SGLang's, and a vLLM text links no SGLang term)."""
    pattern, key_of = _forms(engine)
    pieces, done, linked = [], 0, set()
    for match in pattern.finditer(text):
        key = key_of[match[0].lower()]
        if key in linked:
            continue
        linked.add(key)
        pieces += [esc(text[done : match.start()]), term(key, match[0])]
        done = match.end()
    return "".join(pieces) + esc(text[done:])


def code_term(key: str, text: str | None = None) -> str:
    """A term that is a name in vLLM's code, shown as code."""
    return f"<code>{term(key, text)}</code>"


# A term marked in content/panels.toml: {term:KEY}, {term:KEY|words} or {code:KEY}.
MARKED_TERM = re.compile(r"\{(term|code):([\w-]+)(?:\|([^}]*))?\}")


@cache
def panel_texts() -> dict[str, Any]:
    """content/panels.toml: the stepping page's own words around the data."""
    return load_toml("panels.toml")


def marked_terms(text: str) -> str:
    """A text of content/panels.toml (HTML) on one line, its marked terms linked."""
    link = {"term": term, "code": code_term}
    return MARKED_TERM.sub(lambda m: link[m[1]](m[2], m[3]), one_line(text))


@cache
def _marked(key: str) -> str:
    found: Any = panel_texts()
    for part in key.split("."):
        found = found[part]
    return marked_terms(found)


def said(key: str, **fields: object) -> str:
    """The text of content/panels.toml at ``key`` ("pool.usage"), its marked terms
    linked, its named ``fields`` filled in (str.format)."""
    return _marked(key).format(**fields)


def render_glossary(open_: bool = False) -> str:
    items = "".join(
        f'<dt id="{ANCHOR_PREFIX}{esc(t.key)}" data-term-entry="{esc(t.key)}" tabindex="-1">'
        f"{esc(t.term)}{SGLANG_TAG if t.engine == 'sglang' else ''}</dt><dd>{esc(t.text)}</dd>"
        for t in glossary().values()
    )
    return (
        f'<details class="glossary" data-testid="glossary"{" open" if open_ else ""}>'
        "<summary>Glossary</summary>"
        f"<dl>{items}</dl></details>"
    )
