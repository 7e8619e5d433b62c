"""The code panel of every step: the engine's own source of the functions that ran.

Lines that ran are highlighted and the current one is marked, from the trace
recorded by the engine (engine/lab/play/line_tracer.py), never from a hand-kept map.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from functools import cache

from app.render.code import code_lines, variant_of
from app.render.engines import AnyTimeline  # either engine: their steps carry the same traces
from app.render.html import esc
from engine.lab.play.line_tracer import FunctionTrace

SLOT = '<div class="code-slot"></div>'  # where the frame takes the lines


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


def _line_html(kind: str, html: str, line: int | None, other: int | None) -> str:
    """One line, unmarked: the browser marks what ran (see code_panel.js)."""
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
def _body(sources: tuple[tuple[str, str], ...], trace: FunctionTrace) -> str:
    """A function's lines (unmarked, so one body serves every step that shows it)."""
    lines = code_lines(dict(sources).__getitem__, trace)
    return "".join(_line_html(c.kind, c.html, c.line, c.other_line) for c in lines)


def code_parts(timeline: AnyTimeline, step: int, index: int | None = None) -> CodeParts:
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
    variant = variant_of(trace)
    diff = variant is not None and variant.other is not None
    diff_note = heading = ""
    if variant is not None:
        heading = f" · {variant.label}"
    if variant is not None and diff:
        heading += f", shown against {variant.other_label}"
        old, new = (
            (variant.other_label, variant.label)
            if variant.other_is_old
            else (variant.label, variant.other_label)
        )
        diff_note = (
            f'<span class="k-del">only in {esc(old)}</span>'
            f'<span class="k-add">only in {esc(new)}</span>'
        )
    frame = (
        f'<section class="box" data-testid="code-panel" data-step="{step}" '
        f'data-qualname="{esc(trace.qualname)}" data-file="{esc(trace.file)}" '
        f'data-diff="{str(diff).lower()}" aria-label="code">'
        '<div class="code-head">'
        f'<span><b class="mono">{esc(trace.qualname)}</b>{esc(heading)}</span>'
        f'<span class="where mono">{esc(trace.file)}:{trace.start_line}&ndash;{trace.end_line} · '
        f"{len(trace.lines)} lines ran</span></div>"
        f'<div class="code-scroll">{SLOT}</div>'
        '<div class="code-legend"><span class="k-ran">ran at this step</span>'
        f'<span class="k-current">last line that ran (▶)</span>{diff_note}</div>'
        "</section>"
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
        return {
            "frame": self.frame,
            "body": self.body,
            "ran": list(self.ran),
            "current": self.current,
            "labels": list(self.labels),
            "focus": self.focus,
        }


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
