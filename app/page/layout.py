"""Puts the views together: the start page, the full page, the `?embed=1` compact
figure, and phone widths.

Columns sit in a wrapping FlexBox, so a narrow screen stacks them without a
second layout. The embed fits 800x900: the cache's panels side by side, the deep
dives (code, events, hash chain, prefill cost, offload, glossary) in tabs.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any
from urllib.parse import urlencode

import panel as pn
import param

from app.components.glossary import Glossary
from app.components.start_page import StartPage
from app.components.step_page import EMBED, PAGE, StepPage
from app.data import timelines
from app.data.lab_presets import FLEET_PRESET, TRACES_PRESET, default_preset
from app.data.timelines import split_key
from app.data.url import LAB, LinkState, empty_playground_href, link_query, parse_link
from app.playground.store import is_playground
from app.render.glossary import render_glossary
from app.render.html import render_notice
from app.render.lab import render_lab_link
from app.render.start_page import render_start_page
from app.style.stylesheets import sheet_ids, stylesheet
from app.style.theme import CSS, HOST, PART_HOST, component_sheets
from app.views.base import COMPACT_CSS
from app.views.chain import ChainView
from app.views.code import CodeView
from app.views.editor import CSS as EDITOR_CSS
from app.views.editor import PlaygroundEditor
from app.views.lab_link import STYLESHEETS as LAB_STYLESHEETS
from app.views.lab_link import lab_link_pane
from app.views.panels import PANELS, EmbedHeaderView, HeaderView
from app.views.prefill import PrefillView
from app.views.sender import QUESTIONS, Sender
from app.views.state import SimulatorState

PAGE_WIDTH = 1280
# The page's <head> (main.py): a phone lays the page out at its own width (without a
# viewport tag it lays out 980 px and shrinks the text to about 40%), and reads no text
# under 14 px there (page.css). Read as package files: Pyodide runs main.py with no
# __file__.
PAGE_TEMPLATE = resources.files("app.page").joinpath("page.html").read_text("utf-8")
PAGE_CSS = stylesheet("app.page", "page.css")
EMBED_WIDTH = 800


def scenario_options() -> list[list[str]]:
    """[name, title], in the list's order: the learner picks by what a scenario shows."""
    return [[name, title] for name, title in timelines.titles().items()]


class App(pn.viewable.Viewer):
    state = param.ClassSelector(class_=SimulatorState)
    embed = param.Boolean(default=False)
    start = param.Boolean(default=False, doc="The start page: the address names no scenario")
    prebuilt = param.Boolean(
        default=False,
        doc="The page holds a built-in scenario's document already (the static site's "
        "early page, made by its builder): Python writes only its head",
    )

    def __init__(self, link: LinkState | None = None, **params: object) -> None:
        link = link or LinkState("", "", 0)
        if "state" not in params:
            params["state"] = SimulatorState()
        super().__init__(embed=link.embed, start=link.start, **params)
        if self.start:
            self.glossary = Glossary(html=render_glossary(), sizing_mode="stretch_width", margin=0)
            self.start_page = StartPage(
                html=render_start_page(
                    timelines.titles(),
                    empty_playground_href(),
                    f"?{LAB}={default_preset()}",
                    engines={name: timelines.scenario(name).engines for name in timelines.names()},
                    traces_href=f"?{LAB}={TRACES_PRESET}",
                    fleet_href=f"?{LAB}={FLEET_PRESET}",
                ),
                sizing_mode="stretch_width",
            )
            page = (self.start_page, lab_link_pane(), self.glossary)
            self._layout = self._page(*page, width=PAGE_WIDTH, margin=(10, 16))
            return
        if link.scenario:
            self.state.open(link.scenario, link.mode, link.step)
        state = self.state
        assert state is not None  # (made above)
        compact = self.embed
        # Every view's pages, the code and the questions go into the page's one document,
        # which the one stepping page draws.
        self.sender = Sender(state)
        self.page = StepPage(
            layout=EMBED if compact else PAGE,
            quiz_in_tabs=self.embed and link.quiz is True,
            scenario_options=scenario_options() if len(timelines.names()) > 1 else [],
            ways_html=render_lab_link(default_preset()),
            notice_html=render_notice(link.notices) if link.notices else "",
            glossary_html=render_glossary(),
            sizing_mode="stretch_width",
            margin=0,
        )
        sends = {"state": state, "sender": self.sender, "page": self.page}
        self.sender.add(QUESTIONS)
        header = EmbedHeaderView if self.embed else HeaderView
        self.step_views = [kind(compact=compact, **sends) for kind in (header, *PANELS)]
        self.header, self.narration, self.pool, self.queue, self.hash_map = self.step_views[:5]
        self.offload = self.step_views[-2]
        self.code = CodeView(**sends)
        self.chain = ChainView(**sends)
        self.prefill = PrefillView(**sends)
        self.playground = PlaygroundEditor(shown=not compact, **sends)
        self.page.answer("pick", self._pick)
        self.page.answer("fork", self._fork)
        self.page.answer("open", self._reopen)
        self.page.answer("mode", self._open_mode)
        self._give_sheets()
        # (every view added: the first document)
        self.sender.connect(self.page, self.prebuilt and not is_playground(state.scenario))
        state.param.watch(self._show_playground_button, "scenario")
        self._show_playground_button()
        width, margin = (EMBED_WIDTH, (4, 10)) if compact else (PAGE_WIDTH, (10, 16))
        self._layout = self._page(self.page, width=width, margin=margin)

    def _give_sheets(self) -> None:
        """Each part's stylesheets (step_page.js), every text once."""
        compact = [COMPACT_CSS] if self.embed else []
        parts: dict[str, list[str]] = {
            **{view.part: view.stylesheets for view in self.step_views},
            "code": list(self.code.stylesheets),
            "chain": [*self.chain.stylesheets, *compact],
            "prefill": [*self.prefill.stylesheets, *compact],
            "scenario": [CSS, *compact],
            "engine": [CSS],
            "mode": [CSS],
            "player": [CSS],
            "quiz": component_sheets("quiz.css"),
            "glossary": component_sheets("glossary.css"),
            "tabs": [HOST, stylesheet("app.components", "panel_tabs.css")],
            "ways": list(LAB_STYLESHEETS),
            "notice": [CSS],
            "editor": [CSS, EDITOR_CSS],
        }
        index: dict[str, int] = {}
        part_sheets = {
            name: sheet_ids([PART_HOST, *sheets], index) for name, sheets in parts.items()
        }
        with param.edit_constant(self.page):
            self.page.param.update(
                sheets=list(index), part_sheets=part_sheets, decks=self.sender.views
            )

    def _pick(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """A scenario picked in the page's picker: its document, opened at its start."""
        name = request.get("name")
        if name not in timelines.names():
            return {"error": f"No scenario is named {str(name)[:40]!r}"}
        with self.sender.opening():
            self.state.open(str(name), timelines.modes(str(name))[0], 0)
        return {}

    def _fork(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Edit a copy: the playground's editor opens with the scenario's copy, at the
        page's mode and step."""
        state = self.state
        key, step = request.get("key"), request.get("step")
        with self.sender.opening():
            if isinstance(key, str) and key in state.lasts and isinstance(step, int):
                state.open(state.scenario, split_key(key)[1], max(0, step))
            self.playground.open_fork()
        return {}

    def _open_mode(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """A mode of the open scenario the page does not hold (a playground's, played when
        asked for), at the page's step: of the scenario Python opened last, an edit's if
        one came after the page asked."""
        state, mode, step = self.state, request.get("mode"), request.get("step")
        if mode not in state.modes or not isinstance(step, int):
            return {"error": f"No mode {str(mode)[:40]!r} here"}
        with self.sender.opening():
            state.open(state.scenario, str(mode), max(0, step))
        return {}

    def _reopen(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Open the state of an address the learner went Back or Forward to, when the
        player does not hold it (the player keeps the address bar on the position)."""
        query = request.get("query")
        if not isinstance(query, str):
            return {"error": "No address to open"}
        link = parse_link(query)  # an entry this app wrote: valid, or corrected
        with self.sender.opening():
            self.state.open(link.scenario, link.mode, link.step)
        return {}

    def _page(self, *objects: object, width: int, margin: tuple[int, int]) -> pn.Column:
        return pn.Column(
            *objects,
            sizing_mode="stretch_width",
            max_width=width,
            styles={"margin": "0 auto", "gap": "8px"},
            margin=margin,
            css_classes=["prefix-cache-lab", "embed" if self.embed else "page"],
        )

    def _show_playground_button(self, *_: object) -> None:
        """Edit a copy: on every scenario but a playground, in the full page."""
        self.page.fork_shown = not (self.embed or is_playground(self.state.scenario))

    @property
    def query(self) -> str:
        """The address's query at the learner's state (the player writes it: player.js)."""
        query = link_query(self.state.scenario, self.state.mode, self.state.step)
        return urlencode({**query, **({"embed": "1"} if self.embed else {})})

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
