"""The workload lab's HTML, from runs and their labels as data (app/data/lab.py): a run's numbers,
the expected outcome, the charts' legends, the step view and the playground link."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.render.html import esc
from app.render.metrics import render_metrics
from app.render.pool import render_pool
from app.render.queue import render_queue
from app.render.requests import render_requests
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.content import load_toml
from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.workload import MAX_SCENARIO_BLOCKS

# The labs' words (content/labs.toml), read once for the three labs.
TEXTS = load_toml("labs.toml")
LAB = TEXTS["lab"]
# A run and what it is called: the learner's, then the overlaid one if any.
LabelledRuns = Sequence[tuple[str, WorkloadRun]]


def render_numbers(runs: LabelledRuns) -> str:
    """The engine's headline numbers for the runs, side by side."""
    summaries = [run.summary() for _, run in runs]
    engines = [run.engine for _, run in runs]
    mixed = len(set(engines)) > 1
    head = "".join(
        f'<th scope=col data-engine="{esc(run.engine)}">{esc(name)}</th>' for name, run in runs
    )
    body = []
    reasons: dict[str, str] = {}
    for label, key, fmt in LAB["numbers"]:
        cells = "".join(
            f'<td data-key="{key}" data-engine="{esc(engine)}">'
            + ("n/a" if s[key] is None else esc(fmt.format(s[key]) + unit_of(key, engine, mixed)))
            + "</td>"
            for s, engine in zip(summaries, engines, strict=True)
        )
        missing = {e for s, e in zip(summaries, engines, strict=True) if s[key] is None}
        if missing == {"sglang"} and f"sglang_{key}" in LAB:
            reasons[label] = LAB[f"sglang_{key}"]
        elif missing:
            reasons[label] = LAB.get(f"absent_{key}", "nothing to count")
        body.append(f"<tr><th scope=row>{esc(label)}</th>{cells}</tr>")
    notes = "".join(
        f'<p class="lab-note" data-testid="lab-absent">{esc(label.capitalize())}: n/a, '
        f"{esc(why)}.</p>"
        for label, why in reasons.items()
    )
    return (
        '<table class="lab-numbers" data-testid="lab-numbers"><thead><tr><th></th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{notes}"
    )


def unit_of(key: str, engine: str, mixed: bool) -> str:
    """A figure's unit where the engines count differently (SGLang evicts tokens, vLLM blocks)."""
    if key != "evictions":
        return ""
    return " tokens" if engine == "sglang" else " blocks" if mixed else ""


def render_outcome(
    title: str, expected: Sequence[tuple[str, str]] | None, runs: LabelledRuns
) -> str:
    """The preset's expected outcome per engine (None: knobs not the preset's), and the numbers."""
    note = "" if expected is not None else LAB["differs"]
    texts = "".join(
        (f'<h3 class="lab-engine">{esc(engine)}</h3>' if engine else "")
        + f'<p class="lab-expected" data-testid="lab-expected">{esc(text)}</p>'
        for engine, text in expected or ()
        if text
    )
    return (
        f'<div class="lab-outcome" data-testid="lab-outcome"><h2>{esc(title)}</h2>'
        f"{note}{texts}" + render_numbers(runs) + "</div>"
    )


def run_key_text(labels: Sequence[str]) -> str:
    """Which run is drawn solid and which dashed (the learner's first, then the overlay's)."""
    key = f"Solid: {labels[0]}"
    if len(labels) > 1:
        key += f" · dashed: {labels[1]}"
    return key


def render_run_key(labels: Sequence[str]) -> str:
    """The runs a chart draws, named above its legend's series."""
    return f'<p class="lab-key" data-testid="lab-key">{esc(run_key_text(labels))}</p>'


def render_stale_note(changes: Sequence[str], playing: bool) -> str:
    """The results shown are not the knobs': ``changes`` names each knob as it was for them,
    ``playing`` whether the new knobs' run plays."""
    then = f"the previous knobs: {', '.join(changes)}" if changes else "the previous knobs"
    now = " A run of the new knobs is playing." if playing else ""
    return str(LAB["stale"]).format(then=esc(then), now=esc(now))


def render_empty_chart(title: str, reason: str) -> str:
    """One line instead of a chart whose series are all zero or absent."""
    return str(LAB["empty_chart"]).format(title=esc(title), reason=esc(reason))


def render_lab_notices(notices: Sequence[str]) -> str:
    """Each address parameter the lab ignored, one alert each."""
    return "".join(f'<p class="notice" role="alert">{esc(n)}</p>' for n in notices)


def render_lab_intro() -> str:
    """The lab's heading: what it is, and the way back to the step-by-step simulator."""
    return str(LAB["intro"])


def render_knob_error(message: str) -> str:
    """What is wrong with one knob, beside it (empty: nothing)."""
    return f'<span role="alert">{esc(message)}</span>' if message else ""


def render_lab_link(preset: str) -> str:
    """The simulator's way into the lab, at ``preset``."""
    return str(LAB["link"]).format(preset=esc(preset))


def render_lab_loading() -> str:
    """The lab's page while Python starts on the static site."""
    return str(LAB["loading"])


def render_step_view(timeline: Timeline, index: int, shown: int, last: int) -> str:
    """The pool, queue, requests and counters after engine step ``shown`` (timeline ``index``)."""
    parts = (render_pool, render_queue, render_requests, render_metrics)
    return (
        f'<section class="lab-step" data-testid="lab-step" data-step="{shown}">'
        f"<h2>After engine step {shown} of {last}</h2>"
        + "".join(render(timeline, index) for render in parts)
        + "</section>"
    )


def progress_bar(share: float, text: str) -> str:
    """A lab's status line while a run plays: the bar at ``share``, then ``text``."""
    return f'<progress max="100" value="{share * 100:.0f}"></progress> {text}'


def render_progress(share: float) -> str:
    done = f"{share:.0%} done (building the requests, then running them)"
    return progress_bar(share, f"Running… {done}")


def step_hint(steppable: bool, vllms: bool = False) -> str:
    """How to see a step of the run (``vllms``: say it is vLLM's), or why this run has none."""
    if not steppable:
        return str(LAB["too_big_to_step"]).format(blocks=MAX_SCENARIO_BLOCKS)
    return str(LAB["step_hint"]).format(whose="vLLM's " if vllms else "the ")


def render_no_steps_on_sglang() -> str:
    """Why a run on SGLang alone has no step view and no playground link."""
    return str(LAB["no_steps_on_sglang"])


# The lab's way into the playground: the address is made by the caller
# (app/data/url.py: lab_run_playground_href).
def render_no_playground(reason: str) -> str:
    """Why this run cannot be opened in the playground."""
    return str(LAB["no_playground"]).format(reason=esc(reason))


def render_open_in_playground(href: str, engine_step: int | None = None) -> str:
    """The link to the run's playground (after ``engine_step``, if picked)."""
    where = "" if engine_step is None else f" after engine step {engine_step:,}"
    return str(LAB["open_in_playground"]).format(href=esc(href), where=esc(where))


@dataclass(frozen=True)
class LegendItem:
    """One series a chart draws, as its legend shows it."""

    key: str  # the series' renderer name on the figure
    label: str
    color: str
    dash: str  # Bokeh's dash name: solid, dashed, dotted or dotdash
    marker: str | None = None  # a scatter's marker (circle or triangle), drawn as dots
    alpha: float = 1.0


# Bokeh's named dashes as SVG dash arrays (bokeh.core.enums.DashPattern).
SVG_DASHES = {"solid": "", "dashed": "6", "dotted": "2 4", "dotdash": "2 4 6 4"}


def legend_swatch(item: LegendItem) -> str:
    """A small picture of the series' line or marker, in its colour."""
    if item.marker == "triangle":
        shape = f'<polygon points="9,1 14,9 4,9" fill="{esc(item.color)}"/>'
    elif item.marker is not None:
        shape = f'<circle cx="9" cy="5" r="3.5" fill="{esc(item.color)}"/>'
    else:
        dashes = SVG_DASHES[item.dash]
        shape = (
            f'<line x1="0" y1="5" x2="28" y2="5" stroke="{esc(item.color)}" stroke-width="2"'
            + (f' stroke-dasharray="{dashes}"' if dashes else "")
            + "/>"
        )
    return (
        f'<svg class="swatch" width="28" height="10" viewBox="0 0 28 10" aria-hidden="true"'
        f' opacity="{item.alpha:g}">{shape}</svg>'
    )


def render_chart_legend(title: str, items: Sequence[LegendItem], labels: Sequence[str]) -> str:
    """A chart's legend: which run is solid and which dashed, then a button per series that hides or
    shows it (components/chart_legend.js)."""
    buttons = "".join(
        f'<li><button type="button" data-key="{esc(item.key)}" aria-pressed="true"'
        f' title="Hide or show this series">{legend_swatch(item)}{esc(item.label)}</button></li>'
        for item in items
    )
    return (
        render_run_key(labels)
        + f'<ul class="chart-legend" aria-label="{esc(title)}: series">{buttons}</ul>'
    )
