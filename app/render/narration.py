"""What this step did, as a call and its result, the narration text from `content/`,
and the engine's health: a dead engine core and the auxiliary-output generations; and
the log lines (vLLM-style, or SGLang's) up to the step, the newest in view."""

from __future__ import annotations

import re
from typing import cast

from app.render.engines import on_sglang
from app.render.glossary import link_terms, marked_terms, panel_texts, said
from app.render.header import built_in_scenarios
from app.render.html import esc, panel, plural
from app.render.start_page import learning_path, next_on_path
from engine.lab.play.sglang.timeline import SGLangTimeline
from engine.lab.play.vllm.snapshot import AuxOutputRecord, Snapshot
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.content import one_line

# Results that report a failure: a raised error, or an HTTP status of 400 or more.
_FAILED = re.compile(r"^(\w+Error\b|HTTP [45]\d\d\b|not run\b)")


def result_class(result: str) -> str:
    if result.startswith("HTTP 4"):
        return "result warn"
    return "result error" if _FAILED.match(result) else "result"


def render_aux(aux: AuxOutputRecord) -> str:
    apart = aux.scheduler_generation != aux.worker_generation
    differ, s = " (they differ)" if apart else "", plural(aux.outputs_in_flight)
    return (
        f'<div class="aux{" apart" if apart else ""}" data-testid="aux-output" '
        f'data-scheduler-generation="{aux.scheduler_generation}" '
        f'data-worker-generation="{aux.worker_generation}" '
        f'data-in-flight="{aux.outputs_in_flight}">'
        f"{said('narration.aux', aux=aux, differ=differ, s=s)}</div>"
    )


DEAD_BANNER = (
    '<div class="dead-banner" role="alert" data-testid="engine-dead">'
    f"{marked_terms(panel_texts()['narration']['dead'])}</div>"
)


def way_on(following: tuple[str, str]) -> str:
    """The last step's way on: the next scenario on the path (name, title), or after the
    last one (no name), past the path: the labs and the playground."""
    name, title = following
    words = said("narration.next", name=esc(name), title=esc(title)) if name else ""
    return (
        f'<p class="next-on-path" data-testid="next-on-path" data-scenario="{esc(name)}">'
        f"{words or said('narration.way_on')}</p>"
    )


def render_narration(
    timeline: Timeline | SGLangTimeline, step: int, following: tuple[str, str] | None = None
) -> str:
    """The step's call, result and narration, on either engine (its glossary terms
    linked); ``following``: the next scenario on the path (name, title), offered at
    the last step. SGLang's model has no engine core to die, nor auxiliary outputs."""
    current = timeline.steps[step]
    snapshot = current.snapshot
    vllm = None if on_sglang(timeline) else cast(Snapshot, snapshot)
    engine_dead = vllm is not None and vllm.engine_dead
    aux = vllm.aux_output if vllm is not None else None
    text = one_line(timeline.narration_text(current))
    call = "" if current.index == 0 else f"<code>{esc(current.label)}</code>"
    result = (
        f' <span class="{result_class(current.result)}">→ {esc(current.result)}</span>'
        if current.result
        else ""
    )
    head = call + result if call else '<span class="result">state after the setup</span>'
    dead = " dead" if engine_dead else ""
    return panel(
        "narration",
        "",
        f"{DEAD_BANNER if engine_dead else ''}"
        f'<div class="call">Step {step} · {head}</div>'
        f"<p>{link_terms(text, timeline.engine)}</p>"
        f"{render_aux(aux) if aux else ''}"
        f"{way_on(following) if following and step == len(timeline.steps) - 1 else ''}",
        f' data-testid="narration" data-step="{step}" '
        f'data-engine-dead="{str(engine_dead).lower()}" aria-live="polite"',
        f"box narration{dead}",
    )


def render_narration_on_path(timeline: Timeline | SGLangTimeline, step: int) -> str:
    """The narration, and at the last step a link to the next scenario on the path (the
    full page's; the embed stays on its one scenario)."""
    following = next_on_path(timeline.scenario)
    if following is None:  # the last on the path has a way on too; a playground has none
        on_path = timeline.scenario in learning_path().order
        return render_narration(timeline, step, ("", "") if on_path else None)
    titles = {name: title for name, title, _ in built_in_scenarios()}
    return render_narration(timeline, step, (following, titles[following]))


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
    return panel(
        "log", "Log", f'<div class="log mono" data-testid="log" role="log"><div>{body}</div></div>'
    )
