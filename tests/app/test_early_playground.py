"""The static site's early playground (app/page/early_playground.py), in CPython: a playground
link's page before Panel is ready shows what the engine computed, and an edited script
plays as the live editor plays it."""

from __future__ import annotations

import json
from typing import Any

from app.page import early_playground
from app.playground.editor import EMPTY
from app.playground.script_lines import parse_lines
from app.render.hashmap import render_hash_map
from app.render.log import render_log
from app.render.metrics import render_metrics
from app.render.pool import render_pool
from app.render.queue import render_queue
from app.render.requests import render_requests
from engine.lab import playground_code
from engine.lab.scenario_file import scenario_from_dict
from engine.lab.timeline import build_timeline
from tests.app.playground_checks import SCRIPT
from tests.app.test_layers import imported_by


def data_of(script: str) -> dict[str, Any]:
    steps, errors = parse_lines(script)
    assert not errors
    return {**EMPTY, "pool": {"num_gpu_blocks": 20, "block_size": 4}, "steps": steps}


def ask(**request: object) -> Any:
    return json.loads(early_playground.handle(json.dumps(request)))


def link(data: dict[str, Any], extra: str = "&mode=keep&step=2") -> str:
    return f"?scenario=playground&playground={playground_code.encode(data)}{extra}"


def test_a_link_opens_at_its_position_with_the_engines_views() -> None:
    data = data_of(SCRIPT)
    timeline = build_timeline(scenario_from_dict(data), "keep")
    page = ask(call="open", query=link(data))
    assert (page["key"], page["step"], page["last"]) == (
        f"{timeline.scenario}/keep",
        2,
        len(timeline.steps) - 1,
    )
    assert page["script"] == SCRIPT
    assert page["modes"] == list(scenario_from_dict(data).modes)
    for step in range(len(timeline.steps)):
        shown = ask(call="show", name=page["name"], mode="keep", step=step)
        assert shown["views"] == {
            "pool": render_pool(timeline, step),
            "queue": render_queue(timeline, step),
            "hashmap": render_hash_map(timeline, step),
            "requests": render_requests(timeline, step),
            "metrics": render_metrics(timeline, step),
            "log": render_log(timeline, step),
        }
        narration = " ".join(timeline.narration_text(timeline.steps[step]).split())
        assert narration.replace("'", "&#x27;") in shown["narration"]


def test_an_edited_script_plays_at_the_same_mode_and_step() -> None:
    page = ask(call="open", query=link(data_of(SCRIPT)))
    edited = ask(call="edit", name=page["name"], mode="keep", step=2, script=SCRIPT + "\nstep")
    timeline = build_timeline(scenario_from_dict(data_of(SCRIPT + "\nstep")), "keep")
    assert (edited["key"], edited["step"], edited["last"]) == (
        f"{timeline.scenario}/keep",
        2,
        len(timeline.steps) - 1,
    )
    assert edited["views"]["pool"] == render_pool(timeline, 2)
    shorter = ask(call="edit", name=page["name"], mode="keep", step=99, script="step")
    assert shorter["step"] == shorter["last"]  # the step stays where it still exists


def test_a_script_that_cannot_be_played_says_why() -> None:
    page = ask(call="open", query=link(data_of(SCRIPT)))
    bad = ask(call="edit", name=page["name"], mode="keep", step=0, script="jump 3")
    assert bad == {"error": "; ".join(parse_lines("jump 3")[1])}
    too_big = ask(call="edit", name=page["name"], mode="keep", step=0, script="step 2001")
    assert too_big == {"error": "line 1: count must be a whole number from 1 to 2000, not 2001"}
    too_many = ask(call="edit", name=page["name"], mode="keep", step=0, script="step 2000\nstep")
    assert too_many == {"error": "the script's 2,001 engine steps is more than 2,000"}
    unknown = ask(call="edit", name=page["name"], mode="keep", step=0, script="step\nabort Z")
    assert unknown == {"error": "line 2: abort names request 'Z', which never arrives"}


def test_other_addresses_wait_for_python() -> None:
    data = data_of(SCRIPT)
    assert ask(call="open", query="?scenario=reset") is None
    assert ask(call="open", query=link(data, "&step=999")) is None  # Python's notice
    assert ask(call="open", query=link(data, "&mode=turbo")) is None
    assert ask(call="open", query="?scenario=playground&playground=p1.garbage") is None
    assert ask(call="open", query=link(data, "&embed=1")) is None


def test_it_runs_without_panel() -> None:
    assert not {"panel", "param", "bokeh"} & imported_by(["app.page.early_playground"])
