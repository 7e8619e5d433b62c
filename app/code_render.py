"""Source lines as HTML: Pygments does the highlighting, the trace says what ran.

Kept apart from the view so it can be tested and reused without Panel.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from app.theme import PYGMENTS_STYLE
from engine.trace import FunctionTrace

# Functions whose change against released vLLM is shown, per mode: (file, qualname) ->
# (the modes that run the change, the released variant under content/released/).
RELEASED_VARIANTS: dict[tuple[str, str], tuple[tuple[str, ...], str]] = {
    ("engine/block_pool.py", "BlockPool.reset_prefix_cache"): (
        ("keep",),
        "block_pool_reset_prefix_cache.py",
    ),
}
RELEASED_LABEL = "vLLM 0.33.0 (released)"
# Read through the content package, so it is found in a wheel and in Pyodide too.
RELEASED_DIR = resources.files("content").joinpath("released")


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


@dataclass(frozen=True)
class CodeLine:
    kind: str  # "same", "add" (engine only) or "del" (released only)
    html: str
    line: int | None  # engine line number; None for a released-only line
    released_line: int | None = None


@cache
def released_function(name: str, qualname: str) -> tuple[str, int, int]:
    """The released file's text and the (start, end) lines of ``qualname`` in it."""
    text = RELEASED_DIR.joinpath(name).read_text("utf-8")
    tree = ast.parse(text)
    owner, _, func = qualname.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == func:
                    assert item.end_lineno is not None
                    return text, item.lineno, item.end_lineno
    raise LookupError(f"{qualname} is not in content/released/{name}")


def released_variant(trace: FunctionTrace, mode: str) -> str | None:
    entry = RELEASED_VARIANTS.get((trace.file, trace.qualname))
    if entry is None or mode not in entry[0]:
        return None
    return entry[1]


def code_lines(source: str, trace: FunctionTrace, mode: str) -> list[CodeLine]:
    """The function's lines, or in a changed mode its diff against the released code."""
    engine_html = highlighted_lines(source)
    engine_lines = source.splitlines()[trace.start_line - 1 : trace.end_line]
    numbers = range(trace.start_line, trace.end_line + 1)
    variant = released_variant(trace, mode)
    if variant is None:
        return [CodeLine("same", engine_html[n - 1], n) for n in numbers]

    released_text, r_start, r_end = released_function(variant, trace.qualname)
    released_html = highlighted_lines(released_text)
    released_lines = released_text.splitlines()[r_start - 1 : r_end]
    result: list[CodeLine] = []
    matcher = difflib.SequenceMatcher(a=released_lines, b=engine_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            result.extend(
                CodeLine("del", released_html[r_start - 1 + i], None, r_start + i)
                for i in range(i1, i2)
            )
        kind = "same" if tag == "equal" else "add"
        result.extend(
            CodeLine(kind, engine_html[trace.start_line - 1 + j], trace.start_line + j)
            for j in range(j1, j2)
        )
    return result
