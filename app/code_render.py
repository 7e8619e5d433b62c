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


@dataclass(frozen=True)
class Variant:
    """The other version a traced function is shown against, as a diff."""

    modes: tuple[str, ...]  # the modes in which the diff is shown
    qualname: str  # the other version's function
    released: str | None  # its file under content/released/; None: the traced engine file
    other_is_old: bool  # True: the other is the code before the change (its lines "del")
    label: str  # what the other version is called
    change: str  # what the diff shows, for the panel's heading


RELEASED_LABEL = "vLLM 0.33.0 (released)"
_KEEP_FIX = "keep mode's fix"
_OFFLOAD = "engine/kv_offload.py"
_SCHEDULER = "engine/scheduler.py"

# (file, qualname of the traced function) -> the version to diff it against.
RELEASED_VARIANTS: dict[tuple[str, str], Variant] = {
    ("engine/block_pool.py", "BlockPool.reset_prefix_cache"): Variant(
        ("keep",),
        "BlockPool.reset_prefix_cache",
        "block_pool_reset_prefix_cache.py",
        True,
        RELEASED_LABEL,
        f"the change against {RELEASED_LABEL}",
    ),
    # Keep mode's two crash sites: both versions are engine code, so no copy is kept.
    (_OFFLOAD, "SimpleCPUOffloadSchedulerWithoutFix._process_store_completion"): Variant(
        ("keep",),
        "SimpleCPUOffloadScheduler._process_store_completion",
        None,
        False,
        _KEEP_FIX,
        "before keep mode's fix: what the fix changes",
    ),
    (_OFFLOAD, "SimpleCPUOffloadScheduler._process_store_completion"): Variant(
        ("keep",),
        "SimpleCPUOffloadSchedulerWithoutFix._process_store_completion",
        None,
        True,
        "before the fix",
        "with keep mode's fix, against the code before it",
    ),
    (_SCHEDULER, "SchedulerWithoutKeepFix._should_reset_aux_output"): Variant(
        ("keep",),
        "Scheduler._should_reset_aux_output",
        None,
        False,
        _KEEP_FIX,
        "before keep mode's fix: what the fix changes",
    ),
    (_SCHEDULER, "Scheduler._should_reset_aux_output"): Variant(
        ("keep",),
        "SchedulerWithoutKeepFix._should_reset_aux_output",
        None,
        True,
        "before the fix",
        "with keep mode's fix, against the code before it",
    ),
}
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
    """The (start, end) lines of ``Class.method`` in a module's text."""
    owner, _, func = qualname.rpartition(".")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ClassDef) and node.name == owner:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == func:
                    assert item.end_lineno is not None
                    return item.lineno, item.end_lineno
    raise LookupError(f"{qualname} is not in that file")


@cache
def released_text(name: str) -> str:
    return RELEASED_DIR.joinpath(name).read_text("utf-8")


def released_variant(trace: FunctionTrace, mode: str) -> Variant | None:
    variant = RELEASED_VARIANTS.get((trace.file, trace.qualname))
    return variant if variant is not None and mode in variant.modes else None


def code_lines(source: str, trace: FunctionTrace, mode: str) -> list[CodeLine]:
    """The function's lines, or where a variant applies its diff against the other version."""
    engine_html = highlighted_range(source, trace.start_line, trace.end_line)
    engine_lines = source.splitlines()[trace.start_line - 1 : trace.end_line]
    variant = released_variant(trace, mode)
    if variant is None:
        return [CodeLine("same", html, trace.start_line + j) for j, html in enumerate(engine_html)]

    other_text = source if variant.released is None else released_text(variant.released)
    o_start, o_end = function_range(other_text, variant.qualname)
    other_html = highlighted_range(other_text, o_start, o_end)
    other_lines = other_text.splitlines()[o_start - 1 : o_end]

    def traced(j: int, kind: str) -> CodeLine:
        return CodeLine(kind, engine_html[j], trace.start_line + j)

    def other(i: int, kind: str) -> CodeLine:
        return CodeLine(kind, other_html[i], None, o_start + i)

    # Old lines ("del") before new ones ("add") in each changed run, as a diff reads.
    old, new = (other, traced) if variant.other_is_old else (traced, other)
    a, b = (other_lines, engine_lines) if variant.other_is_old else (engine_lines, other_lines)
    result: list[CodeLine] = []
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
