"""What this step did, as a call, and the narration text from `content/`."""

from __future__ import annotations

from app.views.base import StepView, esc
from engine.timeline import Timeline


def render_narration(timeline: Timeline, step: int) -> str:
    current = timeline.steps[step]
    text = " ".join(timeline.narration_text(current).split())  # TOML line breaks are not meaning
    call = "" if current.index == 0 else f"<code>{esc(current.label)}</code>"
    result = f' <span class="result">→ {esc(current.result)}</span>' if current.result else ""
    head = call + result if call else '<span class="result">state after the setup</span>'
    return (
        f'<section class="box narration" data-testid="narration" data-step="{step}" '
        f'aria-live="polite" aria-label="narration">'
        f'<div class="call">Step {step} · {head}</div>'
        f"<p>{esc(text)}</p>"
        "</section>"
    )


class NarrationView(StepView):
    render = staticmethod(render_narration)
