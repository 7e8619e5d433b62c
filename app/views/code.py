"""The engine's own source of the functions that ran at this step.

Lines that ran are highlighted and the current one is marked, from the trace
recorded by the engine (sys.settrace), never from a hand-kept map.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache

import panel as pn
import param

from app.code_render import code_lines, released_variant, style_defs
from app.errors import logged
from app.state import SimulatorState
from app.theme import CSS
from app.views.base import esc
from app.views.code_panel import SLOT, CodePanel
from engine.timeline import Timeline
from engine.trace import FunctionTrace

# Pygments first, so the app's own rules (backgrounds of ran lines) win.
CODE_CSS = style_defs(".code") + CSS + ".code { background: transparent; }"


def focus_index(timeline: Timeline, step: int) -> int | None:
    current = timeline.steps[step]
    if not current.code:
        return None
    return current.code.index(current.focus) if current.focus in current.code else 0


def function_options(timeline: Timeline, step: int) -> dict[str, int]:
    """Label -> index into the step's traces, in the order they were first entered."""
    current = timeline.steps[step]
    return {
        f"{'▶ ' if t == current.focus else ''}{t.qualname}  ({t.file}:{t.start_line})": i
        for i, t in enumerate(current.code)
    }


def _line_html(kind: str, html: str, line: int | None, other: int | None) -> str:
    """One line, unmarked: the browser marks what ran (see code_panel.py)."""
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
def _body(source: str, trace: FunctionTrace, mode: str) -> str:
    """A function's lines (unmarked, so one body serves every step that shows it)."""
    lines = code_lines(source, trace, mode)
    return "".join(_line_html(c.kind, c.html, c.line, c.other_line) for c in lines)


def code_parts(timeline: Timeline, step: int, index: int | None = None) -> CodeParts:
    current = timeline.steps[step]
    if index is None:
        index = focus_index(timeline, step)
    if index is None or not timeline.traced:
        frame = (
            f'<section class="box" data-testid="code-panel" data-step="{step}" aria-label="code">'
            '<h3 class="panel-title">Code that ran</h3>'
            '<p class="empty-note">No engine code ran: step 0 is the state after the setup. '
            "Step forward to see the functions each action runs.</p></section>"
        )
        return CodeParts(frame, "", (), -1)
    trace = current.code[index]
    variant = released_variant(trace, timeline.mode)
    diff_note = ""
    if variant is not None:
        old, new = (
            (variant.label, "this code") if variant.other_is_old else ("this code", variant.label)
        )
        diff_note = (
            f'<span class="k-del">only in {esc(old)}</span>'
            f'<span class="k-add">only in {esc(new)}</span>'
        )
    frame = (
        f'<section class="box" data-testid="code-panel" data-step="{step}" '
        f'data-qualname="{esc(trace.qualname)}" data-file="{esc(trace.file)}" '
        f'data-diff="{str(variant is not None).lower()}" aria-label="code">'
        '<div class="code-head">'
        f'<span><b class="mono">{esc(trace.qualname)}</b>'
        f"{' · ' + esc(variant.change) if variant else ''}</span>"
        f'<span class="where mono">{esc(trace.file)}:{trace.start_line}&ndash;{trace.end_line} · '
        f"{len(trace.lines)} lines ran</span></div>"
        f'<div class="code-scroll">{SLOT}</div>'
        '<div class="code-legend"><span class="k-ran">ran at this step</span>'
        f'<span class="k-current">last line that ran (▶)</span>{diff_note}</div>'
        "</section>"
    )
    # The marks are not part of the body: drop them from the cache key.
    unmarked = dataclasses.replace(trace, lines=(), last_line=0)
    body = _body(timeline.source(trace.file), unmarked, timeline.mode)
    return CodeParts(frame, body, tuple(sorted(trace.lines)), trace.last_line)


class CodeView(pn.viewable.Viewer):
    """A picker of the functions that ran (the step's focus first chosen) and their code."""

    state = param.ClassSelector(class_=SimulatorState)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._picker = pn.widgets.Select(
            label="Functions that ran at this step (in the order entered)",
            sizing_mode="stretch_width",
            margin=(0, 0, 6, 0),
        )
        self._panel = CodePanel(sizing_mode="stretch_width", stylesheets=[CODE_CSS], margin=0)
        self._parts: CodeParts | None = None
        self._layout = pn.Column(self._picker, self._panel, sizing_mode="stretch_width", margin=0)
        self._updating = False
        self.state.param.watch(self._on_step, ["timeline", "step"])
        self._picker.param.watch(self._on_pick, "value")
        self._on_step()

    @logged
    def _on_step(self, *_: object) -> None:
        timeline, step = self.state.timeline, self.state.step
        assert timeline is not None
        options = function_options(timeline, step)
        index = focus_index(timeline, step)
        self._updating = True  # the picker's own event must not render a second time
        try:
            if options != self._picker.options:
                self._picker.options = options
            self._picker.param.update(value=index, visible=bool(options))
        finally:
            self._updating = False
        self._show(code_parts(timeline, step, index))

    @logged
    def _on_pick(self, event: param.parameterized.Event) -> None:
        if self._updating or event.new is None:
            return
        assert self.state.timeline is not None
        self._show(code_parts(self.state.timeline, self.state.step, event.new))

    def _show(self, parts: CodeParts) -> None:
        """Send only what changed: the lines only when another function is shown."""
        self._parts = parts
        self._panel.param.update(
            {
                name: value
                for name, value in (
                    ("frame", parts.frame),
                    ("body", parts.body),
                    ("ran", list(parts.ran)),
                    ("current", parts.current),
                )
                if getattr(self._panel, name) != value
            }
        )

    @property
    def parts(self) -> CodeParts:
        assert self._parts is not None
        return self._parts

    @property
    def html(self) -> str:
        return self.parts.html

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
