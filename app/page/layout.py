"""Puts the views together: the start page, the full page, the `?embed=1` compact
figure, and phone widths.

Columns sit in a wrapping FlexBox, so a narrow screen stacks them without a
second layout. The embed fits 800x900: the cache's panels side by side, the deep
dives (code, events, hash chain, prefill cost, offload, glossary) in tabs.
"""

from __future__ import annotations

from importlib import resources
from urllib.parse import urlencode

import panel as pn
import param

from app.components.glossary import Glossary
from app.components.keyboard import Keyboard
from app.components.panel_tabs import PanelTabs
from app.components.quiz import QuizPanel
from app.components.start_page import StartPage
from app.data import timelines
from app.data.lab import TRACES_PRESET, default_preset
from app.data.url import LAB, LinkState, link_query, parse_link, playground_query
from app.host.errors import logged
from app.playground.store import EMPTY, is_playground
from app.render.glossary import render_glossary
from app.render.start_page import render_start_page
from app.style.stylesheets import stylesheet
from app.style.theme import FOCUS_RING
from app.views.chain import ChainView
from app.views.code import CodeView
from app.views.controls import Controls
from app.views.editor import PlaygroundEditor
from app.views.hashmap import HashMapView
from app.views.header import EmbedHeaderView, HeaderView
from app.views.lab import lab_link_pane
from app.views.log import LogView
from app.views.metrics import MetricsView
from app.views.narration import NarrationView
from app.views.notice import notice_pane
from app.views.offload import OffloadView
from app.views.pool import PoolView
from app.views.prefill import PrefillView
from app.views.queue import QueueView
from app.views.requests import RequestsView
from app.views.sender import QUESTIONS, Sender
from app.views.state import SimulatorState
from engine.lab.play import playground_code

PAGE_WIDTH = 1280
# Where the full page puts the playground's editor among the views.
LAYOUT_CSS = stylesheet("app.page", "layout.css")
# The page's <head> (main.py): a phone lays the page out at its own width (without a
# viewport tag it lays out 980 px and shrinks the text to about 40%), and reads no text
# under 14 px there (page.css). Read as package files: Pyodide runs main.py with no
# __file__.
PAGE_TEMPLATE = resources.files("app.page").joinpath("page.html").read_text("utf-8")
PAGE_CSS = stylesheet("app.page", "page.css")
EMBED_WIDTH = 800
# The embed's tabs, in the order of its panels (_build_embed).
EMBED_TABS = (
    "The cache",
    "Code",
    "Metrics & events",
    "Hash chain",
    "Prefill cost",
    "CPU offload",
    "Glossary",
)
# With `quiz=1`, the embed's question takes the narration's place, one tab away.
EMBED_STORY_TABS = ("This step", "Predict the next")


def empty_playground_href() -> str:
    """The address of the playground's empty scenario (the editor's "Start empty")."""
    return "?" + urlencode(playground_query(playground_code.encode(EMPTY), "default", 0))


class App(pn.viewable.Viewer):
    state = param.ClassSelector(class_=SimulatorState)
    embed = param.Boolean(default=False)
    start = param.Boolean(default=False, doc="The start page: the address names no scenario")

    def __init__(self, link: LinkState | None = None, **params: object) -> None:
        link = link or LinkState("", "", 0)
        if "state" not in params:
            params["state"] = SimulatorState()
        super().__init__(embed=link.embed, start=link.start, **params)
        self.asks_in_embed = self.embed and link.quiz is True
        self.glossary = Glossary(html=render_glossary(), sizing_mode="stretch_width", margin=0)
        if self.start:
            self.start_page = StartPage(
                html=render_start_page(
                    timelines.titles(),
                    empty_playground_href(),
                    f"?{LAB}={default_preset()}",
                    engines={name: timelines.scenario(name).engines for name in timelines.names()},
                    traces_href=f"?{LAB}={TRACES_PRESET}",
                ),
                sizing_mode="stretch_width",
            )
            self._layout = self._build_start()
            return
        if link.scenario:
            self.state.open(link.scenario, link.mode, link.step)
        state = self.state
        assert state is not None  # (made above)
        compact = self.embed
        # Every view's pages, the code and the questions go into the player's one bundle.
        self.sender = Sender(state)
        self.controls = Controls(state=state, sender=self.sender, compact=compact)
        sends = {"state": state, "sender": self.sender}
        self.quiz = QuizPanel(compact=compact, sizing_mode="stretch_width", margin=0)
        self.sender.add(QUESTIONS)
        self.pool = PoolView(compact=compact, **sends)
        self.queue = QueueView(compact=compact, **sends)
        self.hash_map = HashMapView(compact=compact, **sends)
        self.requests = RequestsView(compact=compact, **sends)
        self.log = LogView(compact=compact, **sends)
        self.code = CodeView(**sends)
        self.narration = NarrationView(compact=compact, **sends)
        self.offload = OffloadView(compact=compact, **sends)
        self.metrics = MetricsView(compact=compact, **sends)
        self.chain = ChainView(**sends)
        self.prefill = PrefillView(**sends)
        self.keyboard = Keyboard()
        self.playground = PlaygroundEditor(state=state)
        self.open_playground = pn.widgets.Button(
            label="Edit a copy", width=170, height=28, margin=(0, 10), stylesheets=[FOCUS_RING]
        )
        self.open_playground.on_click(logged(lambda _: self.playground.open_fork()))
        state.param.watch(self._show_playground_button, "scenario")
        self._show_playground_button()
        header = EmbedHeaderView if self.embed else HeaderView
        self.header = header(**sends)
        self.notice = notice_pane(link.notices)
        self._layout = self._build_embed() if self.embed else self._build()

    def _page(self, *objects: object, width: int, margin: tuple[int, int]) -> pn.Column:
        return pn.Column(
            *objects,
            sizing_mode="stretch_width",
            max_width=width,
            styles={"margin": "0 auto", "gap": "8px"},
            margin=margin,
            css_classes=["prefix-cache-lab", "embed" if self.embed else "page"],
        )

    def _build_start(self) -> pn.viewable.Viewable:
        return self._page(
            self.start_page, lab_link_pane(), self.glossary, width=PAGE_WIDTH, margin=(10, 16)
        )

    def _build(self) -> pn.viewable.Viewable:
        gap = {"margin": (4, 0)}
        side = pn.Row(
            pn.Column(self.hash_map, sizing_mode="stretch_width", **gap),
            sizing_mode="stretch_width",
            margin=0,
        )
        left = pn.Column(
            self.pool,
            self.offload,
            self.queue,
            side,
            self.requests,
            self.chain,
            sizing_mode="stretch_width",
            min_width=300,
            margin=(0, 6, 0, 0),
            styles={"flex": "1 1 520px", "gap": "8px"},
            css_classes=["views-pool"],
        )
        right = pn.Column(
            self.code,
            self.metrics,
            self.log,
            self.prefill,
            self.glossary,
            sizing_mode="stretch_width",
            min_width=300,
            margin=(0, 0, 0, 6),
            styles={"flex": "1 1 440px", "gap": "8px"},
            css_classes=["views-more"],
        )
        # The lab's link and "Edit a copy" share a line: the pool stays on a projector's
        # first screen (1280x720).
        ways_out = pn.Row(
            lab_link_pane(),
            self.open_playground,
            align="center",
            sizing_mode="stretch_width",
            margin=0,
            styles={"flex-wrap": "wrap", "align-items": "center", "gap": "4px 16px"},
        )
        return self._page(
            self.header,
            ways_out,
            self.notice,
            self.controls,
            self.narration,
            self.quiz,
            pn.FlexBox(
                self.playground,
                left,
                right,
                flex_wrap="wrap",
                stylesheets=[LAYOUT_CSS],
                sizing_mode="stretch_width",
                align_items="flex-start",
                margin=(8, 0, 0, 0),
            ),
            self.keyboard,
            width=PAGE_WIDTH,
            margin=(10, 16),
        )

    def _build_embed(self) -> pn.viewable.Viewable:
        """The write-up's figure: at 800x900 the cache's panels are all in view; the
        deep dives are one tab away."""

        def column(*objects: object, flex: str) -> pn.Column:
            return pn.Column(
                *objects,
                sizing_mode="stretch_width",
                min_width=280,
                margin=0,
                styles={"flex": flex, "gap": "6px"},
            )

        cache = pn.FlexBox(
            column(self.pool, self.queue, self.log, flex="1 1 380px"),
            column(self.hash_map, self.requests, flex="1 1 340px"),
            flex_wrap="wrap",
            gap="8px",
            sizing_mode="stretch_width",
            align_items="flex-start",
            margin=0,
        )
        tabs = PanelTabs(
            labels=list(EMBED_TABS),
            objects=[
                cache,
                self.code,
                self.metrics,
                self.chain,
                self.prefill,
                self.offload,
                self.glossary,
            ],
            sizing_mode="stretch_width",
            margin=0,
        )
        # The figure has no room for a question below the text: with `quiz=1` they
        # take turns (quiz.js brings its tab forward while a question waits).
        story = (
            [
                PanelTabs(
                    labels=list(EMBED_STORY_TABS),
                    objects=[self.narration, self.quiz],
                    dense=True,
                    sizing_mode="stretch_width",
                    margin=0,
                )
            ]
            if self.asks_in_embed
            else [self.narration, self.quiz]
        )
        return self._page(
            self.header,
            self.notice,
            self.controls,
            *story,
            tabs,
            self.keyboard,
            width=EMBED_WIDTH,
            margin=(4, 10),
        )

    def _show_playground_button(self, *_: object) -> None:
        """Edit a copy: on every scenario but a playground, in the full page."""
        self.open_playground.visible = not (self.embed or is_playground(self.state.scenario))

    @property
    def query(self) -> str:
        """The address's query at the learner's state (the player writes it: player.js)."""
        query = link_query(self.state.scenario, self.state.mode, self.state.step)
        return urlencode({**query, **({"embed": "1"} if self.embed else {})})

    def follow_url(self) -> None:
        """Open the state of an address the learner goes Back or Forward to, when the
        player does not hold it (the player keeps the address bar on the position).
        The start page has no state to follow: its links open new pages."""
        if self.start:
            return

        @logged
        def reopen(query: str) -> None:
            link = parse_link(query)  # an entry this app wrote: valid, or corrected
            with pn.io.hold():
                self.state.open(link.scenario, link.mode, link.step)
                self.sender.send_position()

        self.controls.player.on_pop = reopen

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
