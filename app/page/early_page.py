"""The static site's page before Python: the app's own layout, written down as plain data.

The builder (app/static_site/early_pages.py) makes the App at every address it ships and
writes what this module reads off its Panel objects: the page's column with its CSS, each
browser component as its .js file and its parameters' values (the stepping page's document
holds every step of every mode), each HTML pane as its HTML; no Panel widget stands in for
anything. app/page/early_page.js lays it out and runs each component's own `render` before
Pyodide has started: the layout is written once, in layout.py. A playground link's page is
the App's at the empty playground, its document left out (the app's worker fills it in:
app/data/early_playground.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import panel as pn
from panel.custom import JSComponent, ReactiveESM
from panel.viewable import Children, Viewable, Viewer

from app.data import timelines, url
from app.render.html import esc, render_notice
from app.style.stylesheets import sheet_ids, stylesheet
from app.style.theme import PART_HOST

if TYPE_CHECKING:
    from app.page.layout import App

Node = dict[str, Any]
HINT = "Steps, modes and scenarios work now; the rest is answered once Python has started."
PLAYGROUND_HINT = (
    "Steps, modes and the editor's fields work now; the rest is answered once Python has started."
)
# Said once the learner asks what only Python answers (a request waits: early_page.js).
ASKED_HINT = "Asked: the answer comes once Python has started."
# Stands where the notice's items go in its frames (early_notices).
NOTICE_ITEM = "PCLITEM"
# The page's style while it works before Python.
STYLE = (
    stylesheet("app.components", "loading_veil.css")
    + stylesheet("app.page", "early_page.css")
    + stylesheet("app.components", "status_note.css")
)


def page_node(app: Viewer, index: dict[str, int]) -> Node:
    """The App's page: a column of components and HTML panes, each shown one a node, their
    stylesheets as places in ``index`` (sheet_ids). The column's own width, margin and
    styles; its parts fill it (early_page.css)."""
    column = app.__panel__()
    if not isinstance(column, pn.Column):
        raise TypeError(f"the early page lays out a column, not {type(column).__name__}")
    # Its `styles` centre it with their own margin: Panel keeps its margin's sides, inside.
    style = {**column.styles, "max-width": f"{column.max_width}px"}
    style["padding"] = f"0 {column.margin[1]}px"
    parts = [part_node(o, index) for o in column.objects if o.visible]
    return {"style": style, "classes": list(column.css_classes), "children": parts}


def part_node(obj: Viewable, index: dict[str, int]) -> Node:
    sheets = sheet_ids([s for s in obj.stylesheets if isinstance(s, str)], index)
    if isinstance(obj, pn.pane.HTML):
        return {"sheets": sheets, "html": str(obj.object or "")}
    if not isinstance(obj, JSComponent):
        raise TypeError(f"the early page cannot lay out {type(obj).__name__}")
    cls = type(obj)
    model: dict[str, Any] = {}
    for name, parameter in cls.param.objects(instance=False).items():
        owner = parameter.owner
        if not (isinstance(owner, type) and issubclass(owner, ReactiveESM)):
            continue  # Panel's own (size, margin, styles): the element's, not the model's
        if isinstance(parameter, Children):
            # (a component's Panel children would need Panel's layout before Python)
            raise TypeError(f"the early page draws no Panel child ({cls.__name__}.{name})")
        model[name] = getattr(obj, name)
    own = [s for s in getattr(cls, "_stylesheets", []) if isinstance(s, str)]
    model = json.loads(json.dumps(model, default=str))
    return {"sheets": sheet_ids(own, index) + sheets, "esm": cls._esm, "model": model}


def early_notices(scenario: str) -> dict[str, Any]:
    """What the address's notice says on ``scenario``'s early page (url.notice_templates),
    as the notice's HTML: each text escaped, and the notice around 1 to 3 of them (an address
    may correct its scenario, mode and step), NOTICE_ITEM and a number where each goes."""

    def escaped(said: Any) -> Any:
        return esc(said) if isinstance(said, str) else {k: escaped(v) for k, v in said.items()}

    frames = [render_notice(tuple(f"{NOTICE_ITEM}{i}" for i in range(n))) for n in (1, 2, 3)]
    return {**escaped(url.notice_templates(scenario)), "frames": frames, "item": NOTICE_ITEM}


def early_page(app: App, playground: bool = False) -> dict[str, Any]:
    """The early page of the App at one address: its tree, its stylesheets, and for a
    scenario's page what tells whether an address is its own (early_page.js). With
    ``playground``, the page of every playground link: the App at a playground, its
    stepping page's document left out."""
    index = {PART_HOST: 0}  # sheet 0: every shadow root's (early_page.js)
    drawn: dict[str, Any] = {"root": page_node(app, index), "style": STYLE}
    drawn["sheets"] = list(index)
    if playground:
        (stepping,) = drawn["root"]["children"]  # (the worker fills its document)
        stepping["model"]["document_json"] = "{}"
        drawn.update(playground=True, hint=PLAYGROUND_HINT, asked_hint=ASKED_HINT)
    elif not app.start and app.state is not None:
        drawn.update(
            **addresses_facts(app.query, app.state.scenario, app.state.lasts),
            hint=HINT,
            asked_hint=ASKED_HINT,
        )
    return drawn


def addresses_facts(query: str, scenario: str, lasts: dict[str, int]) -> dict[str, Any]:
    """What tells which addresses a scenario's early page opens, where, and what it says of
    them (app/components/address.js): its own address, each mode's last step, the default
    scenario, the notices."""
    return {
        "query": query,
        "lasts": lasts,
        "default_scenario": timelines.default_scenario(),
        "notices": early_notices(scenario),
    }
