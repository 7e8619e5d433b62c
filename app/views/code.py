"""The engine's own source of the functions that ran at this step.

Lines that ran are highlighted and the current one is marked, from the trace
recorded by the engine (sys.settrace), never from a hand-kept map.
"""

from __future__ import annotations

import panel as pn
import param

from app.code_render import RELEASED_LABEL, code_lines, released_variant, style_defs
from app.errors import logged
from app.state import SimulatorState
from app.theme import CSS
from app.views.base import esc
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


def _line_html(
    kind: str, html: str, line: int | None, released: int | None, trace: FunctionTrace
) -> str:
    ran = line is not None and line in trace.lines
    current = line is not None and line == trace.last_line
    classes = [
        "ln",
        *([kind] if kind != "same" else []),
        *(["ran"] if ran else []),
        *(["current"] if current else []),
    ]
    marker = {"add": "+", "del": "&minus;"}.get(kind, "")
    if current:
        marker = "▶"
    attrs = f' data-line="{line}"' if line is not None else f' data-released-line="{released}"'
    if ran:
        attrs += ' data-ran="true"'
    if current:
        attrs += ' data-current="true" aria-current="step"'
    number = line if line is not None else ""
    return (
        f'<div class="{" ".join(classes)}"{attrs}><span class="no">{number}</span>'
        f'<span class="mk">{marker}</span><code>{html}</code></div>'
    )


def render_code(timeline: Timeline, step: int, index: int | None = None) -> str:
    current = timeline.steps[step]
    if index is None:
        index = focus_index(timeline, step)
    if index is None or not timeline.traced:
        return (
            f'<section class="box" data-testid="code-panel" data-step="{step}" aria-label="code">'
            '<h3 class="panel-title">Code that ran</h3>'
            '<p class="empty-note">No engine code ran: step 0 is the state after the setup. '
            "Step forward to see the functions each action runs.</p></section>"
        )
    trace = current.code[index]
    source = timeline.source(trace.file)
    lines = code_lines(source, trace, timeline.mode)
    body = "".join(_line_html(c.kind, c.html, c.line, c.released_line, trace) for c in lines)
    is_diff = released_variant(trace, timeline.mode) is not None
    diff_note = (
        f'<span class="k-add">added by the change</span><span class="k-del">removed: '
        f"{esc(RELEASED_LABEL)}</span>"
        if is_diff
        else ""
    )
    ran = sum(1 for c in lines if c.line is not None and c.line in trace.lines)
    return (
        f'<section class="box" data-testid="code-panel" data-step="{step}" '
        f'data-qualname="{esc(trace.qualname)}" data-file="{esc(trace.file)}" '
        f'data-diff="{str(is_diff).lower()}" aria-label="code">'
        '<div class="code-head">'
        f'<span><b class="mono">{esc(trace.qualname)}</b>'
        f"{' · the change against ' + esc(RELEASED_LABEL) if is_diff else ''}</span>"
        f'<span class="where mono">{esc(trace.file)}:{trace.start_line}&ndash;{trace.end_line} · '
        f"{ran} lines ran</span></div>"
        f'<div class="code-scroll"><div class="code mono" role="list">{body}</div></div>'
        '<div class="code-legend"><span class="k-ran">ran at this step</span>'
        f'<span class="k-current">last line that ran (▶)</span>{diff_note}</div>'
        "</section>"
    )


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
        self._pane = pn.pane.HTML("", sizing_mode="stretch_width", stylesheets=[CODE_CSS], margin=0)
        self._layout = pn.Column(self._picker, self._pane, sizing_mode="stretch_width", margin=0)
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
            self._picker.param.update(options=options, value=index, visible=bool(options))
        finally:
            self._updating = False
        self._pane.object = render_code(timeline, step, index)

    @logged
    def _on_pick(self, event: param.parameterized.Event) -> None:
        if self._updating or event.new is None:
            return
        assert self.state.timeline is not None
        self._pane.object = render_code(self.state.timeline, self.state.step, event.new)

    @property
    def html(self) -> str:
        return str(self._pane.object)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
