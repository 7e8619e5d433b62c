"""A step of either engine as lines of text: its line, its narration, what only that
engine shows (cli/vllm/step_text.py, cli/sglang/step_text.py), the code that ran."""

from __future__ import annotations

import textwrap
from typing import Any

from engine.lab.play.timeline import StepRecord, TimelineRecord


def step_text(timeline: TimelineRecord, step: StepRecord[Any, Any], body: list[str]) -> list[str]:
    """A step of either engine as lines of text: its line (index, action, result), its
    narration, ``body`` (what only that engine shows), then the code that ran."""
    head = f"== step {step.index} / {len(timeline) - 1}: {step.label}"
    if step.result is not None:
        head += f" -> {step.result}"
    lines = [head]
    narration = timeline.narration_text(step)
    if narration:
        lines.extend(textwrap.wrap(" ".join(narration.split()), 88))
    lines.extend(body)
    if step.focus is not None:
        ran = ", ".join(f"{t.qualname} ({len(t.lines)} lines)" for t in step.code)
        lines.append(f"code: {step.focus.file} line {step.focus.last_line}; ran {ran}")
    return lines
