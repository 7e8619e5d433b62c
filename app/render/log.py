"""vLLM-style (or SGLang's) log lines from the start up to this step; the newest stays in view."""

from __future__ import annotations

from app.render.html import esc
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.timeline import Timeline


def render_log(timeline: Timeline | SGLangTimeline, step: int) -> str:
    """Either engine's log lines (SGLang's: its prefill-batch and flush_cache lines)."""
    lines = []
    for index in range(step + 1):
        for line in timeline.steps[index].snapshot.logs:
            new = " new" if index == step else ""
            lines.append(
                f'<div class="line{new}" data-step="{index}">'
                f'<span class="lvl-{esc(line.level)}">{esc(line.level)}</span> '
                f"{esc(line.logger)}: {esc(line.message)}</div>"
            )
    body = "".join(lines) or '<div class="empty-note">no log lines yet</div>'
    # column-reverse keeps the scroll position at the newest (last) line, without JS.
    return (
        f'<section class="box" aria-label="log">'
        '<h3 class="panel-title">Log</h3>'
        f'<div class="log mono" data-testid="log" role="log"><div>{body}</div></div>'
        "</section>"
    )
