"""The three labs' HTML, from runs and their labels as data (app/data/): a run's numbers, the
expected outcome, the charts' legends, the step view and the playground link; the "Real traces"
gap to the paper and the replay with time's numbers; the fleet's table and replicas. Their words
are content/labs.toml's templates, filled here by ``lab_text``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.render.html import esc
from app.render.metrics import render_metrics
from app.render.pool import render_pool
from app.render.queue import render_queue
from app.render.requests import render_requests
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.shared.content import load_toml
from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.workload import MAX_SCENARIO_BLOCKS

if TYPE_CHECKING:  # the other pages import this module, but not the traces' or the fleet's
    from engine.lab.fleet.result import FleetRun
    from engine.lab.traces.paper_gap import PaperGap
    from engine.lab.traces.timed import TimedTraceRun

# The labs' words (content/labs.toml), read once for the three labs.
TEXTS = load_toml("labs.toml")
LAB, TRACES, FLEET = TEXTS["lab"], TEXTS["traces"], TEXTS["fleet"]
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}
# A run and what it is called: the learner's, then the overlaid one if any.
LabelledRuns = Sequence[tuple[str, WorkloadRun]]


class Html(str):
    """A value that ``lab_text`` puts in its template as it is: HTML already."""


def lab_text(group: str, key: str, **values: Any) -> str:
    """Content/labs.toml's [group] ``key``, filled with ``values`` (text escaped)."""
    escaped = {name: esc(v) if type(v) is str else v for name, v in values.items()}
    return str(TEXTS[group][key]).format(**escaped)


def engine_steps(runs: Sequence[WorkloadRun]) -> str:
    """Each run's engine and its steps, for a status line."""
    return ", ".join(
        lab_text("lab", "engine_steps", engine=ENGINE_NAMES[run.engine], steps=run.num_steps)
        for run in runs
    )


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
        lab_text("lab", "absent", label=label.capitalize(), why=why)
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


def render_run_key(labels: Sequence[str]) -> str:
    """The runs a chart draws, named above its legend's series: the learner's solid, then the
    overlay's dashed."""
    dashed = "".join(lab_text("lab", "run_key_dashed", label=label) for label in labels[1:2])
    return lab_text("lab", "run_key", label=labels[0], dashed=Html(dashed))


def render_stale_note(changes: Sequence[str], playing: bool) -> str:
    """The results shown are not the knobs': ``changes`` names each knob as it was for them,
    ``playing`` whether the new knobs' run plays."""
    then = lab_text("lab", "stale_changes", changes=", ".join(changes)) if changes else ""
    return lab_text("lab", "stale", then=Html(then), now=LAB["stale_playing"] if playing else "")


def render_lab_notices(notices: Sequence[str]) -> str:
    """Each address parameter the lab ignored, one alert each."""
    return "".join(f'<p class="notice" role="alert">{esc(n)}</p>' for n in notices)


def render_knob_error(message: str) -> str:
    """What is wrong with one knob, beside it (empty: nothing)."""
    return f'<span role="alert">{esc(message)}</span>' if message else ""


def render_lab_link(preset: str) -> str:
    """The simulator's way into the lab, at ``preset``."""
    return lab_text("lab", "link", preset=preset)


def render_lab_loading() -> str:
    """The lab's page while Python starts on the static site."""
    return str(LAB["loading"])


def render_step_view(timeline: Timeline, index: int, shown: int, last: int) -> str:
    """The pool, queue, requests and counters after engine step ``shown`` (timeline ``index``)."""
    parts = (render_pool, render_queue, render_requests, render_metrics)
    panels = Html("".join(render(timeline, index) for render in parts))
    return lab_text("lab", "step_view", shown=shown, last=last, panels=panels)


def render_progress(share: float, group: str, key: str = "progress", **values: Any) -> str:
    """A lab's status line while a run plays: the bar at ``share``, then [group]'s ``key`` text."""
    text = lab_text(group, key, share=share, **values)
    return f'<progress max="100" value="{share * 100:.0f}"></progress> {text}'


def step_hint(steppable: bool, vllms: bool = False) -> str:
    """How to see a step of the run (``vllms``: say it is vLLM's), or why this run has none."""
    if not steppable:
        return lab_text("lab", "too_big_to_step", blocks=MAX_SCENARIO_BLOCKS)
    return lab_text("lab", "step_hint", whose=Html("vLLM's ") if vllms else "the ")


def render_open_in_playground(href: str, engine_step: int | None = None) -> str:
    """The link to the run's playground (after ``engine_step``, if picked)."""
    where = "" if engine_step is None else lab_text("lab", "after_step", step=engine_step)
    return lab_text("lab", "open_in_playground", href=href, where=where)


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


def gap_sentence(gap: PaperGap, whole_trace: bool, requests: int) -> str:
    """One engine's unlimited-capacity hit rate against the paper's ratio, in words."""
    # Plain text, escaped once as a whole in gap_p: filled by str.format, not lab_text.
    words: dict[str, str] = TRACES["gap"]
    values = {**gap.to_dict(), "engine": ENGINE_NAMES.get(gap.engine, gap.engine)}
    found = words["found"].format(**values)
    if not whole_trace:
        return words["slice"].format(found=found, requests=requests)
    if gap.paper_cache_ratio is None or gap.gap_tokens is None:
        return words["no_ratio"].format(found=found)
    whole_blocks = gap.block_size != 1
    values |= {
        "points": abs(values["gap_rate"]) * 100,
        "direction": words["above" if gap.gap_tokens < 0 else "below"],
        "gap_size": abs(gap.gap_tokens),
        "last": words["last_block" if whole_blocks else "last_token"],
        "granularity": words["granularity"].format(**values) if whole_blocks else "",
    }
    return words["gap"].format(found=found, **values)


def render_gap_sentences(gaps: Mapping[str, PaperGap], whole_trace: bool, requests: int) -> str:
    """The sentence under the chart, one per engine drawn."""
    if not gaps:
        return ""
    sentences = "".join(
        lab_text("traces", "gap_p", engine=engine, text=gap_sentence(gap, whole_trace, requests))
        for engine, gap in gaps.items()
    )
    return f'<div class="lab-traces-gap">{sentences}</div>'


def render_timed_result(runs: Sequence[TimedTraceRun]) -> str:
    """Each engine's numbers, the time its steps cover and the requests left out."""
    notes = "".join(
        lab_text(
            "traces",
            "timed_duration",
            engine=ENGINE_NAMES[run.engine],
            steps=run.num_steps,
            step_ms=run.step_ms,
            seconds=run.summary()["duration_ms"] / 1000,
            skipped=lab_text("traces", "timed_skipped", skipped=run.skipped_requests)
            if run.skipped_requests
            else "",
        )
        for run in runs
    )
    numbers = render_numbers([(ENGINE_NAMES[run.engine], run) for run in runs])
    return f'<div class="lab-timed-result">{numbers}{notes}</div>'


def render_fleet_intro() -> str:
    routers = FLEET["routers"].items()
    items = "".join(f"<li><b>{esc(name)}</b>: {esc(what)}</li>" for name, what in routers)
    return lab_text("fleet", "intro", routers=Html(items))


def render_fleet_numbers(runs: Mapping[tuple[str, str], FleetRun]) -> str:
    """A row per (engine, router): hit rate, busiest replica's share, stale routes."""
    rows = "".join(
        "<tr>"
        f"<td>{esc(ENGINE_NAMES.get(engine, engine))}</td><td>{esc(router)}</td>"
        f"<td>{run.hit_rate:.1%}</td><td>{run.max_replica_share:.0%}</td>"
        f"<td>{run.stale_routes:,} of {run.believed_routes:,}</td>"
        "</tr>"
        for (engine, router), run in runs.items()
    )
    return lab_text("fleet", "numbers", rows=Html(rows))


def render_replica_links(
    run: FleetRun, refusal: str | None, links: Sequence[Mapping[str, Any]]
) -> str:
    """Each replica of the run as a link to the playground (``links``: each replica's figures and
    its ``href``, None: ``reason``), or why the run does not open there."""
    if refusal is not None:
        return lab_text("lab", "no_playground", reason=refusal)
    items = "".join(
        lab_text("fleet", f"replica_{link['kind']}", plural="s" * (link["requests"] != 1), **link)
        for link in links
    )
    engine = ENGINE_NAMES[run.engine]
    return lab_text("fleet", "replicas", router=run.router, engine=engine, items=Html(items))
