"""A playground link's document before Panel is installed: what the static site's worker
answers the link's early page with.

A playground link names the learner's own scenario, so the builder cannot write its
steps down. The engine, the renders and the bundle need no package, so the app's Pyodide
worker loads this project's wheel alone first and answers with this module
(app/static_site/shims/early_in_worker.js) while Panel and Bokeh install: documents as
the App's sender writes them (docs/document.md), and an edit played as the live editor
plays it (app/playground/fields.py): a new playground, whose address the player writes,
so the live page opens it from the address. The timelines are untraced (about 5x cheaper
to build), so the code panel's part is left out: the code panel waits for Python.

`handle` takes and returns JSON text: the worker passes strings only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from app.data import timelines
from app.data.bundle import bundle, document_head
from app.data.timelines import split_key, timeline_key
from app.data.url import parse_link
from app.playground import fields, store
from app.render.decks import deck_renders
from app.render.engines import AnyTimeline


@lru_cache(maxsize=16)  # a name is a hash of the playground's data: it never changes
def untraced_timeline(name: str, mode: str) -> AnyTimeline:
    """The timeline without the lines that ran: no deck here shows them."""
    return store.build(store.get(name).scenario, mode, trace=False)


def pages(
    name: str,
    mode: str,
    step: int,
    decks: Sequence[str],
    serial: int,
    around_only: bool = False,
) -> dict[str, Any]:
    """The document of one mode's timeline, opened at ``step``: every deck's pages
    (``around_only``: the step's and its neighbours', the rest asked for as a mode) and
    the questions."""
    timeline = untraced_timeline(name, mode)
    step = max(0, min(step, len(timeline.steps) - 1))
    at = (timeline_key(timeline), step)
    renders = deck_renders(decks, compact=False)
    sent = bundle((timeline,), renders, at, around_only, code=False)
    head = document_head(at, serial, timelines.lasts(name), sent["held"])
    return {**head, "views": sent["views"], "questions": sent["questions"]}


def open_link(query: str, decks: Sequence[str], serial: int) -> dict[str, Any] | None:
    """A valid playground link's document at its mode and step, and its editor's fields;
    None for any other address (and for one Python would answer with a notice, or the
    embed's: the live page says it)."""
    link = parse_link(query)
    if link.notices or link.embed or not store.is_playground(link.scenario):
        return None
    data = store.get(link.scenario).data
    return {
        "document": pages(link.scenario, link.mode, link.step, decks, serial),
        "fields": fields.shown(data),
    }


def edit(
    key: str, step: int, texts: dict[str, Any], decks: Sequence[str], serial: int
) -> dict[str, Any]:
    """The playground of the timeline ``key`` with the fields' ``texts``: the editor's
    messages, and a new playground's document, opened at the same mode (if it has it) and
    step (within its last), as the editor opens it."""
    name, mode = split_key(key)
    playground, _, messages = fields.edit(store.get(name).data, texts)
    said = {field: fields.message_html(text) for field, text in messages.items()}
    if playground is None or playground.scenario.name == name:
        return {"messages": said}
    edited = playground.scenario.name
    modes = timelines.modes(edited)
    # The step's pages first: the early page asks for the rest (`mode`) unless the learner
    # has typed on since (an edit's answer is what they wait for).
    opened = pages(edited, mode if mode in modes else modes[0], step, decks, serial, True)
    return {"messages": said, "document": opened}


def handle(request: str) -> str:
    """One request of the early page (JSON): {"call": "open", "query", "decks", "serial"}
    | {"call": "mode", "key", "step", "decks", "serial"} | {"call": "edit", "key", "step",
    "fields", "decks", "serial"} (fields: the editor's, by name)."""
    asked = json.loads(request)
    call, decks = asked["call"], asked["decks"]
    answer: dict[str, Any] | None
    if call == "open":
        answer = open_link(asked["query"], decks, int(asked["serial"]))
    elif call == "mode":
        name, mode = split_key(asked["key"])
        answer = {"document": pages(name, mode, int(asked["step"]), decks, int(asked["serial"]))}
    elif call == "edit":
        key, step, serial = asked["key"], int(asked["step"]), int(asked["serial"])
        answer = edit(key, step, dict(asked["fields"]), decks, serial)
    else:
        raise ValueError(f"unknown call {call!r}")
    return json.dumps(answer, separators=(",", ":"))
