"""The bundle (app/data/bundle.py) is pure: built without a page, it holds what every view,
the code panel and the questions show at every step."""

from __future__ import annotations

from app.data import timelines
from app.data.bundle import bundle, steps_around
from app.data.timelines import timeline_key
from app.render.code_plan import code_parts
from app.views.base import StepView
from app.views.panels import PANELS, EmbedHeaderView, HeaderView
from engine.lab.play.questions import all_questions
from engine.lab.play.vllm.timeline import Timeline


def step_views() -> dict[str, type[StepView]]:
    """Every StepView of the page, by the name the bundle gives its pages."""
    views: list[type[StepView]] = [HeaderView, EmbedHeaderView, *PANELS]
    return {view.__name__: view for view in views}


def test_the_reset_scenarios_bundle_holds_every_page_plan_and_question_of_every_step() -> None:
    reset = timelines.of_scenario("reset")
    views = {name: view.render for name, view in step_views().items()}
    sent = bundle(reset, views, (timeline_key(reset[0]), 0))
    code = sent["code"]
    for timeline in reset:
        key = timeline_key(timeline)
        assert sent["lasts"][key] == len(timeline.steps) - 1
        assert sent["questions"][key] == all_questions(timeline)
        for step in range(len(timeline.steps)):
            for name, render in views.items():
                deck = sent["views"][name]
                assert deck["pages"][deck["orders"][key][step]] == render(timeline, step), name
            plan = code["plans"][key][step]
            parts = code_parts(timeline, step)
            assert code["frames"][plan["frame"]] == parts.frame
            assert sent["bodies"][plan["body"]] == parts.body


def test_around_only_sends_the_shown_steps_neighbourhood_and_null_elsewhere() -> None:
    reset: tuple[Timeline, ...] = timelines.of_scenario("reset")
    shown = timeline_key(reset[0])
    sent = bundle(reset, {"pool": step_views()["PoolView"].render}, (shown, 3), around_only=True)
    for timeline in reset:
        key = timeline_key(timeline)
        near = steps_around(timeline, 3) if key == shown else range(0)
        orders, plans = sent["views"]["pool"]["orders"][key], sent["code"]["plans"][key]
        assert [s for s, i in enumerate(orders) if i is not None] == list(near)
        assert [s for s, p in enumerate(plans) if p is not None] == list(near)
