"""A session-less document (as in Pyodide) hears only the browser's changes, not the
app's own changes back (app/components/component.py)."""

from __future__ import annotations

from collections.abc import Iterator

import panel as pn
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc
from panel.reactive import Syncable

from app.components.chart_legend import ChartLegend
from app.data.url import parse_link
from app.page.layout import App
from app.playground.store import EMPTY

SCRIPT = "add_request A max_tokens=3 prompt: 1..8\nstep\nreset_prefix_cache keep\nstep 4"


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, tuple[str, ...]]]]:
    """Every change Panel takes as coming from the browser: (component, properties)."""
    changes: list[tuple[str, tuple[str, ...]]] = []
    process = Syncable._process_events

    def spy(self: Syncable, events: dict[str, object]) -> None:
        changes.append((type(self).__name__, tuple(events)))
        process(self, events)

    monkeypatch.setattr(Syncable, "_process_events", spy)
    yield changes


def test_a_playground_edit_is_not_heard_back_as_the_browser_s(
    doc: Document, heard: list[tuple[str, tuple[str, ...]]]
) -> None:
    app = App(link=parse_link("?scenario=reset"))
    with set_curdoc(doc):
        doc.add_root(app.__panel__().get_root(doc))
        app.playground.load(EMPTY)
        app.page.request({"ask": "edit", "fields": {**app.playground.fields, "script": SCRIPT}})
    assert app.state.last_step == 7  # add_request, step, reset, 4 steps: the edit played
    assert app.pool.html
    assert heard == []


def test_a_change_made_in_the_browser_is_still_heard(
    doc: Document, heard: list[tuple[str, tuple[str, ...]]]
) -> None:
    legend = ChartLegend(html="<p>series</p>")
    with set_curdoc(doc):
        model = legend.get_root(doc)
        doc.add_root(model)
    with set_curdoc(doc), pn.io.hold(doc):
        legend.hidden = ["a"]
    assert heard == []
    busy: list[bool] = []
    watcher = pn.state.param.watch(lambda event: busy.append(event.new), "busy")
    try:
        with set_curdoc(doc):
            model.data.hidden = ["a"]  # what Python holds: nothing changes
            assert heard == []
            model.data.hidden = ["b"]  # the learner hid another series
    finally:
        pn.state.param.unwatch(watcher)
    assert heard == [("ChartLegend", ("hidden",))]
    assert legend.hidden == ["b"]
    assert busy == []  # not counted as busy (no indicator shows it)
