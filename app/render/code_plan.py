"""The code panel of every step: the engine's own source of the functions that ran.

Pygments does the highlighting; where a function is one side of a registered change, it
is shown as a diff against the other. Lines that ran are highlighted and the current one
is marked, from the trace recorded by the engine (engine/lab/play/line_tracer.py), never
from a hand-kept map.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from functools import cache

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from app.render.engines import AnyTimeline  # either engine: their steps carry the same traces
from app.render.glossary import said
from app.render.html import esc, panel
from app.style.theme import PYGMENTS_STYLE
from engine.lab.play.line_tracer import FunctionTrace
from engine.lab.play.vllm.variants import Counterpart, FunctionRef, counterpart

SLOT = '<div class="code-slot"></div>'  # where the frame takes the lines


def style_defs(scope: str) -> str:
    return str(HtmlFormatter(style=PYGMENTS_STYLE).get_style_defs(scope))


@cache
def highlighted_lines(text: str) -> tuple[str, ...]:
    """Each source line as self-contained HTML (Pygments closes spans at line ends)."""
    out = highlight(
        text, PythonLexer(stripnl=False), HtmlFormatter(nowrap=True, style=PYGMENTS_STYLE)
    )
    # Pygments may drop or add a trailing newline; line i of the text is lines[i-1].
    return tuple(out.split("\n"))


@cache
def highlighted_range(text: str, start: int, end: int) -> tuple[str, ...]:
    """Lines start..end of the text, highlighted on their own: a function's lines lex
    alike in or out of their file, and a whole file costs Pyodide a quarter second."""
    return highlighted_lines("\n".join(text.splitlines()[start - 1 : end]))[: end - start + 1]


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


def _line_html(kind: str, html: str, line: int | None, other: int | None = None) -> str:
    """One line, unmarked (the browser marks what ran: code_panel.js): ``kind`` "same",
    "add" (only in the newer version) or "del" (only in the older); ``line``, its number in
    the traced function's file, else ``other``, in the other version's."""
    classes = " ".join(["ln", *([kind] if kind != "same" else [])])
    marker = {"add": "+", "del": "\N{MINUS SIGN}"}.get(kind, "")
    attrs = f' data-line="{line}"' if line is not None else f' data-other-line="{other}"'
    if marker:
        attrs += f' data-mk="{marker}"'
    number = line if line is not None else ""
    return (
        f'<div class="{classes}"{attrs}><span class="no">{number}</span>'
        f'<span class="mk">{marker}</span><code>{html}</code></div>'
    )


def code_lines(source: Callable[[str], str], trace: FunctionTrace) -> list[str]:
    """The function's lines (HTML) or, where it is one side of a change, its diff against
    the other.

    ``source`` gives the text of an engine file by its name.
    """
    text = source(trace.file)
    variant = variant_of(trace)
    if variant is None or variant.other is None:
        engine_html = highlighted_range(text, trace.start_line, trace.end_line)
        return [
            _line_html("same", html, trace.start_line + j) for j, html in enumerate(engine_html)
        ]

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

    def traced(j: int, kind: str) -> str:
        return _line_html(kind, engine_html[j], start + j)

    def other(i: int, kind: str) -> str:
        return _line_html(kind, other_html[i], None, o_start + i)

    # Old lines ("del") before new ones ("add") in each changed run, as a diff reads.
    old, new = (other, traced) if variant.other_is_old else (traced, other)
    a, b = (other_lines, engine_lines) if variant.other_is_old else (engine_lines, other_lines)
    result = [
        _line_html("same", html, trace.start_line + j) for j, html in enumerate(decorator_html)
    ]
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


def focus_index(timeline: AnyTimeline, step: int) -> int | None:
    current = timeline.steps[step]
    if not current.code:
        return None
    return current.code.index(current.focus) if current.focus in current.code else 0


def function_options(timeline: AnyTimeline, step: int) -> dict[str, int]:
    """Label -> index into the step's traces, in the order they were first entered."""
    current = timeline.steps[step]
    return {
        f"{'▶ ' if t == current.focus else ''}{t.qualname}  ({t.file}:{t.start_line})": i
        for i, t in enumerate(current.code)
    }


@dataclass(frozen=True)
class CodeParts:
    """The code panel of one step: frame and lines as HTML, and the marks."""

    frame: str  # contains SLOT where the lines go, unless nothing ran
    body: str
    ran: tuple[int, ...]
    current: int  # -1: none

    @property
    def html(self) -> str:
        return self.frame.replace(SLOT, f'<div class="code mono" role="list">{self.body}</div>')


@cache
def _body(sources: tuple[tuple[str, str], ...], trace: FunctionTrace) -> str:
    """A function's lines (unmarked, so one body serves every step that shows it)."""
    return "".join(code_lines(dict(sources).__getitem__, trace))


def code_parts(timeline: AnyTimeline, step: int, index: int | None = None) -> CodeParts:
    current = timeline.steps[step]
    if index is None:
        index = focus_index(timeline, step)
    if index is None or not timeline.traced:
        nothing = f'<p class="empty-note">{said("code.nothing_ran")}</p>'
        frame = panel(
            "code", "Code that ran", nothing, f' data-testid="code-panel" data-step="{step}"'
        )
        return CodeParts(frame, "", (), -1)
    trace = current.code[index]
    variant = variant_of(trace)
    diff = variant is not None and variant.other is not None
    diff_note = heading = ""
    if variant is not None:
        heading = f" · {variant.label}"
    if variant is not None and diff:
        heading += f", shown against {variant.other_label}"
        labels = (variant.label, variant.other_label)
        old, new = labels[::-1] if variant.other_is_old else labels
        diff_note = (
            f'<span class="k-del">only in {esc(old)}</span>'
            f'<span class="k-add">only in {esc(new)}</span>'
        )
    frame = panel(
        "code",
        "",
        '<div class="code-head">'
        f'<span><b class="mono">{esc(trace.qualname)}</b>{esc(heading)}</span>'
        f'<span class="where mono">{esc(trace.file)}:{trace.start_line}&ndash;{trace.end_line} · '
        f"{len(trace.lines)} lines ran</span></div>"
        f'<div class="code-scroll">{SLOT}</div>'
        '<div class="code-legend"><span class="k-ran">ran at this step</span>'
        f'<span class="k-current">last line that ran (▶)</span>{diff_note}</div>',
        f' data-testid="code-panel" data-step="{step}" data-qualname="{esc(trace.qualname)}" '
        f'data-file="{esc(trace.file)}" data-diff="{str(diff).lower()}"',
    )
    # The marks are not part of the body: drop them from the cache key.
    unmarked = dataclasses.replace(trace, lines=(), last_line=0)
    body = _body(timeline.sources, unmarked)
    return CodeParts(frame, body, tuple(sorted(trace.lines)), trace.last_line)


@dataclass(frozen=True)
class Plan:
    """The code panel at one step: which frame and body (indices into the shared ones)
    show the step's focus function, its marks, and every function that ran."""

    frame: int
    body: int
    ran: tuple[int, ...]  # lines that ran
    current: int  # the last line that ran; -1: none
    labels: tuple[str, ...]  # the picker's entries, one per function that ran
    focus: int  # the focus function's index into labels; -1: none

    def as_dict(self) -> dict[str, object]:
        """As the browser reads it (code_panel.js), by name. (Not dataclasses.asdict, which
        deep-copies every field, on every step of every edit.)"""
        return {**vars(self), "ran": list(self.ran), "labels": list(self.labels)}


@dataclass(frozen=True)
class CodePlan:
    """The code panel of every step (each step's focus function) of some timelines.

    Frames and bodies are shared by every timeline: modes mostly run the same code.
    """

    frames: tuple[str, ...]
    bodies: tuple[str, ...]
    plans: dict[str, tuple[Plan | None, ...]]  # per timeline key, per step (None: not sent)

    @classmethod
    def of(
        cls,
        timelines: Mapping[str, AnyTimeline],
        steps: Callable[[AnyTimeline], Container[int]] | None = None,
        held_frames: tuple[str, ...] = (),
        held_bodies: tuple[str, ...] = (),
    ) -> CodePlan:
        """``timelines``: by the key the browser names them with. ``steps``: per
        timeline, the steps planned (the others are None, sent later;
        default every step). ``held_frames``, ``held_bodies``: what the browser holds
        from an earlier plan, kept at their indices, so its plans stay right while this
        one arrives (a body is a function's source, the same in every timeline: an
        edit's plan then sends no body the browser has)."""
        frame_index = {frame: i for i, frame in enumerate(held_frames)}
        body_index = {body: i for i, body in enumerate(held_bodies)}
        plans: dict[str, tuple[Plan | None, ...]] = {}
        for key, timeline in timelines.items():
            planned = steps(timeline) if steps else range(len(timeline.steps))
            plan: list[Plan | None] = []
            for step in range(len(timeline.steps)):
                if step not in planned:
                    plan.append(None)
                    continue
                parts = code_parts(timeline, step)
                focus = focus_index(timeline, step)
                plan.append(
                    Plan(
                        frame=frame_index.setdefault(parts.frame, len(frame_index)),
                        body=body_index.setdefault(parts.body, len(body_index)),
                        ran=parts.ran,
                        current=parts.current,
                        labels=tuple(function_options(timeline, step)),
                        focus=-1 if focus is None else focus,
                    )
                )
            plans[key] = tuple(plan)
        return cls(tuple(frame_index), tuple(body_index), plans)

    def as_dicts(self) -> dict[str, list[dict[str, object] | None]]:
        return {
            key: [None if p is None else p.as_dict() for p in plan]
            for key, plan in self.plans.items()
        }
