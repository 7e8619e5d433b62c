"""The static site's early playground: a playground link's page before Panel is ready.

A playground link (`?scenario=playground&playground=CODE`) has no pre-rendered copy:
its scenario is the learner's own. The engine and the pure renderers (app/render/)
are standard library only, so the app's Pyodide worker loads this project's wheel
alone first and answers with this module (app/static_site/shims/early_in_worker.js)
while Panel and Bokeh install, seconds before the app starts. It opens the
link's timeline at its mode and step, renders the views that have a pure renderer,
and plays an edited script, as the live editor does (app/playground/editor.py):
the same parsing, the same checks, the same timelines (app/playground/store.py).

`handle` takes and returns JSON text: the worker passes strings only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from app.data.timelines import engine_of, timeline_key
from app.data.url import parse_link
from app.page.theme import CSS
from app.playground import store
from app.playground.script_lines import field_places, format_lines, parse_numbered_lines
from app.render.hashmap import render_hash_map
from app.render.header import render_header
from app.render.html import esc
from app.render.log import render_log
from app.render.metrics import render_metrics
from app.render.pool import render_pool
from app.render.queue import render_queue
from app.render.requests import render_requests
from engine.lab.scenario import ScenarioError
from engine.lab.timeline import Timeline, build_timeline

# The editor's script field, labelled as the live editor labels it (app/playground/editor.py):
# the live page gets an edited script through it.
SCRIPT_LABEL = "Script (one action per line)"
# The views with a pure renderer, in the live page's order; the others (the code panel,
# the hash chain) wait for Python.
VIEWS: dict[str, Callable[[Timeline, int], str]] = {
    "pool": render_pool,
    "queue": render_queue,
    "hashmap": render_hash_map,
    "requests": render_requests,
    "metrics": render_metrics,
    "log": render_log,
}


def render_narration_text(timeline: Timeline, step: int) -> str:
    """The step's call and its narration, as plain escaped text."""
    current = timeline.steps[step]
    text = " ".join(timeline.narration_text(current).split())
    call = "state after the setup" if current.index == 0 else current.label
    return (
        f'<section class="box narration" data-testid="early-narration" aria-label="narration">'
        f'<div class="call">Step {step} · <code>{esc(call)}</code></div>'
        f"<p>{esc(text)}</p></section>"
    )


@lru_cache(maxsize=16)  # a name is a hash of the playground's data: it never changes
def untraced_timeline(name: str, mode: str) -> Timeline:
    """The timeline without the lines that ran (about 5x cheaper to build): the views
    shown here do not show them; the live page builds the traced one."""
    return build_timeline(store.get(name).scenario, mode, trace=False)


def page(name: str, mode: str, step: int) -> dict[str, Any]:
    """The early page of a playground at a position (the step kept within the timeline)."""
    playground = store.get(name)
    timeline = untraced_timeline(name, mode)
    last = len(timeline.steps) - 1
    step = max(0, min(step, last))
    views = {key: render(timeline, step) for key, render in VIEWS.items()}
    return {
        "key": timeline_key(timeline),
        "name": name,
        "mode": mode,
        "modes": list(playground.scenario.modes),
        "step": step,
        "last": last,
        "script": format_lines(list(playground.data.get("steps", []))),
        "header": render_header(timeline, step),
        "narration": render_narration_text(timeline, step),
        "views": views,
    }


def open_link(query: str) -> dict[str, Any] | None:
    """The page of a valid playground link; None for any other address (and for one
    Python would answer with a notice: the live page says it). A position on SGLang is
    left to Python too: the renderers here draw vLLM's timelines only."""
    link = parse_link(query)
    if link.notices or link.embed or not store.is_playground(link.scenario):
        return None
    if engine_of(link.mode) == "sglang":
        return None
    return page(link.scenario, link.mode, link.step)


def edit(name: str, mode: str, step: int, script: str) -> dict[str, Any]:
    """The page of the playground `name` with its script replaced, at the same mode
    (if the edited one has it) and step (if it still exists); else what is wrong."""
    numbered, errors = parse_numbered_lines(script)
    if errors:
        return {"error": "; ".join(errors[:3])}
    data = {k: v for k, v in store.get(name).data.items() if k != "steps"}
    data["steps"] = [action for _, action in numbered]
    try:
        playground = store.register(data, field_places(None, [n for n, _ in numbered]))
    except ScenarioError as error:
        return {"error": str(error)}
    modes = playground.scenario.modes
    return page(playground.scenario.name, mode if mode in modes else modes[0], step)


def handle(request: str) -> str:
    """One request of the early page (JSON): {"call": "open", "query"} | {"call": "show",
    "name", "mode", "step"} | {"call": "edit", "name", "mode", "step", "script"}."""
    asked = json.loads(request)
    call = asked["call"]
    answer: dict[str, Any] | None
    if call == "open":
        answer = open_link(asked["query"])
        if answer is not None:
            answer["css"] = CSS
    elif call == "show":
        answer = page(asked["name"], asked["mode"], int(asked["step"]))
    elif call == "edit":
        answer = edit(asked["name"], asked["mode"], int(asked["step"]), asked["script"])
    else:
        raise ValueError(f"unknown call {call!r}")
    return json.dumps(answer)
