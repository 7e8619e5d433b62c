"""Source lines as HTML: Pygments does the highlighting, the trace says what ran.

Kept apart from the view so it can be tested and reused without Panel.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from app.page.theme import PYGMENTS_STYLE
from engine.lab.play.line_tracer import FunctionTrace
from engine.lab.play.vllm.variants import Counterpart, FunctionRef, counterpart


def style_defs(scope: str) -> str:
    return str(HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(scope))


@cache
def highlighted_lines(text: str) -> tuple[str, ...]:
    """Each source line as self-contained HTML (Pygments closes spans at line ends)."""
    out = highlight(
        text, PythonLexer(stripnl=False), HtmlFormatter(nowrap=True, style=PYGMENTS_STYLE)
    )
    lines = out.split("\n")
    # Pygments may drop or add a trailing newline; line i of the text is lines[i-1].
    return tuple(lines)


@cache
def highlighted_range(text: str, start: int, end: int) -> tuple[str, ...]:
    """Lines start..end of the text, highlighted on their own: a function's lines lex
    alike in or out of their file, and a whole file costs Pyodide a quarter second."""
    return highlighted_lines("\n".join(text.splitlines()[start - 1 : end]))[: end - start + 1]


@dataclass(frozen=True)
class CodeLine:
    kind: str  # "same", "add" (only in the newer version) or "del" (only in the older)
    html: str
    line: int | None  # line number of the traced function; None for the other version's
    other_line: int | None = None  # line number in the other version's file


@cache
def function_range(text: str, qualname: str) -> tuple[int, int]:
    """The (start, end) lines of the def of ``function`` or ``Class.method`` in a module's text."""
    owner, _, func = qualname.rpartition(".")
    tree = ast.parse(text)
    bodies = [tree.body] if not owner else []
    bodies += [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == owner]
    for body in bodies:
        for item in body:
            if isinstance(item, ast.FunctionDef) and item.name == func:
                assert item.end_lineno is not None
                return item.lineno, item.end_lineno
    raise LookupError(f"{qualname} is not in that file")


def variant_of(trace: FunctionTrace) -> Counterpart | None:
    """The change a traced function is part of (registered in the engine), if any."""
    return counterpart(FunctionRef(trace.file, trace.qualname))


def code_lines(source: Callable[[str], str], trace: FunctionTrace) -> list[CodeLine]:
    """The function's lines or, where it is one side of a change, its diff against the other.

    ``source`` gives the text of an engine file by its name.
    """
    text = source(trace.file)
    variant = variant_of(trace)
    if variant is None or variant.other is None:
        engine_html = highlighted_range(text, trace.start_line, trace.end_line)
        return [CodeLine("same", html, trace.start_line + j) for j, html in enumerate(engine_html)]

    # The diff starts at the def line: the decorator that registers the change
    # is shown above it as it is, as part of neither version.
    start, end = function_range(text, trace.qualname)
    decorator_html = (
        highlighted_range(text, trace.start_line, start - 1) if trace.start_line < start else ()
    )
    engine_html = highlighted_range(text, start, end)
    engine_lines = text.splitlines()[start - 1 : end]
    other_text = source(variant.other.file)
    o_start, o_end = function_range(other_text, variant.other.qualname)
    other_html = highlighted_range(other_text, o_start, o_end)
    other_lines = other_text.splitlines()[o_start - 1 : o_end]

    def traced(j: int, kind: str) -> CodeLine:
        return CodeLine(kind, engine_html[j], start + j)

    def other(i: int, kind: str) -> CodeLine:
        return CodeLine(kind, other_html[i], None, o_start + i)

    # Old lines ("del") before new ones ("add") in each changed run, as a diff reads.
    old, new = (other, traced) if variant.other_is_old else (traced, other)
    a, b = (other_lines, engine_lines) if variant.other_is_old else (engine_lines, other_lines)
    result = [CodeLine("same", html, trace.start_line + j) for j, html in enumerate(decorator_html)]
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            # Equal lines are shown once, as the traced function's (they carry the trace).
            result.extend(
                traced(j if variant.other_is_old else i, "same")
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        result.extend(old(i, "del") for i in range(i1, i2))
        result.extend(new(j, "add") for j in range(j1, j2))
    return result
