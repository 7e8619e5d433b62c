"""A step, a play tick, a mode or an engine switch in the browser sends nothing from Python
to the page, in every scenario and in a playground: watched on every model of the page's
document, not on a list of views."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bokeh.document import Document
from bokeh.document.events import DocumentChangedEvent, ModelChangedEvent
from panel.io.state import set_curdoc

from app.data import timelines
from app.data.url import parse_link
from app.page.layout import App
from app.playground.store import EMPTY

SCRIPT = "add_request A max_tokens=3 prompt: 1..8\nstep\nreset_prefix_cache keep\nstep 4"


def sent_to_the_page(doc: Document, app: App, positions: list[list[Any]]) -> list[str]:
    """Every change of any model of ``doc`` while the browser's player takes ``positions``,
    the player's own `at` (the browser's write) aside."""
    player = app.page
    ((model, _),) = player._models.values()  # the player's Bokeh model on this page
    changes: list[str] = []

    def note(event: DocumentChangedEvent) -> None:
        if (
            isinstance(event, ModelChangedEvent)
            and event.model is model.data
            and event.attr == "at"
        ):
            return
        changes.append(
            f"{type(event.model).__name__}.{getattr(event, 'attr', '?')}"
            if isinstance(event, ModelChangedEvent)
            else type(event).__name__
        )

    doc.on_change(note)
    try:
        with set_curdoc(doc):
            for at in positions:
                model.data.at = at  # the browser moved: a step, a tick, a mode, an engine
                assert list(player.at) == at
    finally:
        doc.remove_on_change(note)
    return changes


def every_position(app: App) -> list[list[Any]]:
    """Each timeline of the open scenario stepped through one after another, forward, then
    a step back and a jump back to the first step: every mode switch and, where it plays
    there, the switch to SGLang (each at another step than the last)."""
    positions: list[list[Any]] = []
    for timeline in app.state.scenario_timelines:
        key = timelines.timeline_key(timeline)
        last = len(timeline.steps) - 1
        positions += [[key, s] for s in range(last + 1)] + [[key, max(0, last - 1)]]
    first = timelines.timeline_key(app.state.scenario_timelines[0])
    return [*positions, [first, 0]]


@pytest.mark.parametrize("name", timelines.names())
def test_the_browser_moving_hears_nothing_from_python(doc: Document, name: str) -> None:
    app = App(link=parse_link(f"?scenario={name}"))
    with set_curdoc(doc):
        doc.add_root(app.__panel__().get_root(doc))
    positions = every_position(app)
    assert sent_to_the_page(doc, app, positions) == []
    assert app.state.step == 0  # (Python heard where the browser went)


def test_the_watch_sees_python_writing_to_the_page(doc: Document) -> None:
    """The check can fail: a change Python makes at a step is seen."""
    app = App(link=parse_link("?scenario=reset"))
    with set_curdoc(doc):
        doc.add_root(app.__panel__().get_root(doc))
    app.state.param.watch(lambda _: setattr(app.page, "fork_shown", False), "step")
    assert sent_to_the_page(doc, app, [["reset/default", 1]]) != []


def test_a_playground_stepped_in_the_browser_hears_nothing_from_python(doc: Document) -> None:
    app = App(link=parse_link("?scenario=reset"))
    with set_curdoc(doc):
        doc.add_root(app.__panel__().get_root(doc))
        app.playground.load(EMPTY)
        app.playground.script.value_input = SCRIPT
    timeline = app.state.timeline
    assert timeline is not None and len(timeline.steps) == 8  # the edit played
    key = app.state.key
    positions = [[key, s] for s in [*range(8), *range(7, -1, -1)]]
    # (a playground's other modes are played when the learner first asks for one)
    assert sent_to_the_page(doc, app, positions) == []


def test_a_request_is_answered_in_one_message_with_its_id(doc: Document) -> None:
    """The channel's other half: a pick from the browser gets one reply, named by its id."""
    app = App(link=parse_link("?scenario=reset&mode=keep&step=1"))
    with set_curdoc(doc):
        doc.add_root(app.__panel__().get_root(doc))
    sent: list[Any] = []
    doc.on_change(lambda event: sent.append(event))
    with set_curdoc(doc):
        app.page._handle_msg({"ask": "code", "key": "reset/keep", "step": 1, "index": 0, "id": 41})
    (message,) = sent
    reply = json.loads(message.msg_data.data)
    assert reply["id"] == 41 and reply["picked"]["key"] == "reset/keep"
