"""A playground link's early page, as the static site's worker answers it
(app/data/early_playground.py), in CPython: the document is the one the live page gets
(but the code panel's part), a mode picked and an edited script too, and an edit plays as
the live editor plays it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest

from app.data import early_playground
from app.data.url import link_query, parse_link
from app.page.layout import App
from app.playground import store
from app.playground.fields import LABELS, MESSAGES, message_html, shown
from app.playground.store import EMPTY
from app.views.editor import fork
from engine.lab.play import playground_code
from engine.lab.play.script_lines import parse_lines
from tests.app.playground_checks import SCRIPT
from tests.app.test_layers import imported_by


def data_of(script: str) -> dict[str, Any]:
    steps, errors = parse_lines(script)
    assert not errors
    return {**EMPTY, "pool": {"num_gpu_blocks": 20, "block_size": 4}, "steps": steps}


def typing(script: str) -> dict[str, Any]:
    """The editor's fields at the link's playground (data_of(SCRIPT)), the script typed."""
    return {**shown(data_of(SCRIPT)), "script": script}


def link(data: dict[str, Any], extra: str = "&mode=keep&step=2") -> str:
    return f"?scenario=playground&playground={playground_code.encode(data)}{extra}"


def live(query: str) -> tuple[App, dict[str, Any]]:
    """The App at the address, and its page's document."""
    app = App(link=parse_link(query))
    return app, app.page.opened


def ask(**request: object) -> Any:
    return json.loads(early_playground.handle(json.dumps(request)))


# What a document says besides its pages, as the live page's: all but its number.
HEAD = ("version", "at", "keep", "lasts", "queries", "scenario", "held")


def head(document: dict[str, Any], *but: str) -> dict[str, Any]:
    return {name: document[name] for name in HEAD if name not in but}


def same_pages(early: dict[str, Any], document: dict[str, Any]) -> None:
    """Every deck's pages and the questions as the live page's, and no code."""
    assert early["views"] == document["views"]
    assert early["questions"] == document["questions"]
    assert "code" not in early and "bodies" not in early


@pytest.mark.parametrize("where", ["keep", "lpm"])
def test_a_link_opens_with_the_document_the_live_page_gets_but_the_code(where: str) -> None:
    data = data_of(SCRIPT) if where == "keep" else fork("shared-prefix")
    name = store.register(data).scenario.name
    query = "?" + urlencode(link_query(name, where, 2))
    _, document = live(query)
    decks = sorted(document["views"])
    assert "chain" in decks and "prefill" in decks  # every deck of the page
    opened = ask(call="open", query=query, decks=decks, serial=1)
    early = opened["document"]
    same_pages(early, document)
    assert head(early) == head(document) and early["serial"] == 1
    assert early["at"] == [f"{name}/{where}", 2]
    assert opened["fields"] == shown(store.get(name).data)
    assert set(opened["fields"]) == set(LABELS)


def test_a_mode_picked_gets_that_modes_document() -> None:
    query = link(data_of(SCRIPT))
    _, document = live(query)
    decks = sorted(document["views"])
    name = document["at"][0].split("/")[0]
    picked = ask(call="mode", key=f"{name}/preempt", step=2, decks=decks, serial=5)["document"]
    _, other = live(link(data_of(SCRIPT), "&mode=preempt&step=2"))
    same_pages(picked, other)
    assert head(picked) == head(other) and picked["serial"] == 5


def test_an_edited_script_opens_a_new_playground_at_the_same_mode_and_step() -> None:
    _, document = live(link(data_of(SCRIPT)))
    decks = sorted(document["views"])
    key = document["at"][0]
    edited = ask(
        call="edit", key=key, step=3, fields=typing(SCRIPT + "\nstep"), decks=decks, serial=2
    )
    assert set(edited["messages"]) == {*MESSAGES} - {"file"}
    assert not any(edited["messages"].values())
    _, want = live(link(data_of(SCRIPT + "\nstep"), "&mode=keep&step=3"))
    first = edited["document"]
    assert head(first, "held") == head(want, "held") and first["serial"] == 2
    # The step's pages and its neighbours' first (what the learner waits for), as the
    # live page's; the rest of the timeline is the next answer's (early_page.js asks it).
    opened = want["at"][0]
    assert first["held"] == {opened: [2, 5]}
    for name, deck in first["views"].items():
        order, live_deck = deck["orders"][opened], want["views"][name]
        assert [s for s, i in enumerate(order) if i is not None] == [2, 3, 4], name
        for s in (2, 3, 4):
            page = live_deck["pages"][live_deck["orders"][opened][s]]
            assert deck["pages"][order[s]] == page, (name, s)
    rest = ask(call="mode", key=opened, step=3, decks=decks, serial=3)
    same_pages(rest["document"], want)
    # The player writes the new playground's code into the address.
    query = first["queries"][want["at"][0]]
    assert query["playground"] == playground_code.encode(data_of(SCRIPT + "\nstep"))
    shorter = ask(call="edit", key=key, step=99, fields=typing("step"), decks=decks, serial=3)
    at = shorter["document"]["at"]
    assert at[1] == shorter["document"]["lasts"][at[0]]  # the step within it
    same = ask(call="edit", key=key, step=3, fields=typing(SCRIPT), decks=decks, serial=4)
    assert "document" not in same  # the same playground: nothing to open


def test_a_script_that_cannot_be_played_says_why_as_the_editor_does() -> None:
    _, document = live(link(data_of(SCRIPT)))
    key = document["at"][0]

    def said(script: str) -> Any:
        answer = ask(
            call="edit", key=key, step=0, fields=typing(script), decks=["PoolView"], serial=2
        )
        assert "document" not in answer  # the last valid timeline stays
        return answer["messages"]["script"]

    assert said("jump 3") == message_html("; ".join(parse_lines("jump 3")[1]))
    assert said("step 2001") == message_html(
        "line 1: count must be a whole number from 1 to 2000, not 2001"
    )
    assert said("step\nabort Z") == message_html(
        "line 2: abort names request 'Z', which never arrives"
    )


def test_other_addresses_wait_for_python() -> None:
    data = data_of(SCRIPT)

    def opened(query: str) -> Any:
        return ask(call="open", query=query, decks=["PoolView"], serial=1)

    assert opened("?scenario=reset") is None
    assert opened(link(data, "&step=999")) is None  # Python's notice
    assert opened(link(data, "&mode=turbo")) is None
    assert opened("?scenario=playground&playground=p1.garbage") is None
    assert opened(link(data, "&embed=1")) is None


def test_it_runs_on_the_projects_wheel_alone() -> None:
    imported = imported_by(["app.data.early_playground"])
    assert not {"panel", "param", "bokeh", "pygments"} & imported
