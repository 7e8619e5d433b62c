"""The static site's page before Python: the app's own layout, written down as plain data.

The builder (app/static_site/early_pages.py) makes the App at every address it ships,
in CPython, and writes what this module reads off its Panel objects: the page's column
with its CSS, and in it each browser component as the name of its .js file and the
values of its parameters (the stepping page's among them: its document holds every step
of every mode) and each HTML pane as its HTML. There is no Panel widget to stand in for:
the stepping page's controls, the playground's editor among them, are its own.
app/page/early_page.js lays that out with plain elements and runs each
component's own `render`, so the page steps, switches modes and scenarios before
Pyodide has started. The layout itself is written once, in layout.py.

A playground link's page is the App's at the empty playground, its stepping page named
(the early page fills its document and its editor's fields at run time, from the app's
worker: app/data/early_playground.py, for the link's own playground).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import panel as pn
from panel.custom import JSComponent, ReactiveESM
from panel.viewable import Children, Viewable, Viewer

from app.data import timelines, url
from app.render.html import esc, render_notice
from app.style.stylesheets import stylesheet

if TYPE_CHECKING:
    from app.page.layout import App

Node = dict[str, Any]
HINT = "Steps, modes and scenarios work now; the rest is answered once Python has started."
PLAYGROUND_HINT = (
    "Steps, modes and the editor's fields work now; the rest is answered once Python has started."
)
# Said once the learner asks what only Python answers (a request waits: early_page.js).
ASKED_HINT = "Asked: the answer comes once Python has started."
# The playground page's stepping page, filled at run time by its name (early_page.js).
PLAYER = "player"
# Stands where the notice's items go in its frames (early_notices).
NOTICE_ITEM = "PCLITEM"
# The base of every component's shadow root, as Bokeh's on the live page.
HOST_SHEET = stylesheet("app.style", "part_host.css")
# The page's style while it works before Python.
STYLE = stylesheet("app.page", "early_page.css") + stylesheet("app.components", "status_note.css")


class EarlyPage:
    """One page's tree of nodes, with every stylesheet written once (`sheets`)."""

    def __init__(self, named: dict[int, str] | None = None) -> None:
        self.sheets: list[str] = []
        # id(object) -> its name: the early page fills these parts (kept if hidden)
        self.named = named or {}
        self._sheet_index: dict[str, int] = {}
        self.sheet_ids([HOST_SHEET])  # sheet 0: every shadow root's (early_page.js)

    def sheet_ids(self, texts: list[str]) -> list[int]:
        ids = []
        for text in texts:
            if text not in self._sheet_index:
                self._sheet_index[text] = len(self.sheets)
                self.sheets.append(text)
            ids.append(self._sheet_index[text])
        return ids

    def page(self, app: Viewer) -> Node:
        """The App's page: a column of components and HTML panes, each shown one a node."""
        column = app.__panel__()
        if not isinstance(column, pn.Column):
            raise TypeError(f"the early page lays out a column, not {type(column).__name__}")
        node = self._outer(column)
        node["style"].update({"display": "flex", "flex-direction": "column"})
        node.update(box="column", children=[self._part(o) for o in column.objects if o.visible])
        return node

    def _part(self, obj: Viewable) -> Node:
        if isinstance(obj, JSComponent):
            node = self._component(obj)
        elif isinstance(obj, pn.pane.HTML):
            node = {**self._outer(obj), "html": str(obj.object or "")}
        else:
            raise TypeError(f"the early page cannot lay out {type(obj).__name__}")
        if id(obj) in self.named:
            node["name"] = self.named[id(obj)]
        return node

    def _outer(self, obj: Viewable) -> Node:
        """What Panel puts on the element around an object in a column: size, margin,
        classes, styles."""
        style: dict[str, str] = {}
        margin = obj.margin
        if margin is not None:
            sides = (margin,) * 4 if isinstance(margin, int) else tuple(margin)
            if len(sides) == 2:
                sides = (sides[0], sides[1], sides[0], sides[1])
            if "margin" in (obj.styles or {}):
                # A page's `styles` centre it with their own margin: Panel keeps the
                # sides of its margin, inside.
                style["padding"] = f"0 {sides[1]}px 0 {sides[3]}px"
            else:
                style["margin"] = " ".join(f"{side}px" for side in sides)
        for name in ("width", "height", "min_width", "max_width", "min_height", "max_height"):
            value = getattr(obj, name, None)
            if value is not None:
                style[name.replace("_", "-")] = f"{value}px"
        # Inline, as Panel sets them on each element: they win over a stylesheet's
        # `:host` rules (the theme's).
        if obj.sizing_mode in ("stretch_width", "stretch_both"):
            style["width"] = "auto"
            style["align-self"] = "stretch"  # (across the column)
        else:
            style.setdefault("width", "auto")
            style["flex"] = "0 0 auto"
        style.setdefault("max-width", "100%")  # (a long line wraps within its row)
        style["box-sizing"] = "border-box"
        style.update({key: str(value) for key, value in (obj.styles or {}).items()})
        sheets = [s for s in obj.stylesheets if isinstance(s, str)]
        return {"style": style, "classes": list(obj.css_classes), "sheets": self.sheet_ids(sheets)}

    def _component(self, obj: JSComponent) -> Node:
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
        node = self._outer(obj)
        own = [s for s in getattr(cls, "_stylesheets", []) if isinstance(s, str)]
        node["sheets"] = self.sheet_ids(own) + node["sheets"]
        node.update({"esm": cls._esm, "model": json.loads(json.dumps(model, default=str))})
        return node


def playground_parts(app: App) -> dict[int, str]:
    """id -> name of the part of a playground's page the early page fills: the stepping
    page (its document and its editor's fields)."""
    return {id(app.page): PLAYER}


def blank_player(page: Node) -> None:
    """The page's document left out (the worker fills it, for the link's playground)."""
    for part in page["children"]:
        if part.get("name") == PLAYER:
            part["model"]["document_json"] = "{}"


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
    ``playground``, the page of every playground link: the App at a playground, with
    the parts filled at run time named and its document left out."""
    page = EarlyPage(playground_parts(app) if playground else None)
    drawn: dict[str, Any] = {
        "root": page.page(app),
        "sheets": page.sheets,
        "style": STYLE,
    }
    if playground:
        blank_player(drawn["root"])
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
