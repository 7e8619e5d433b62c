"""Puts the views together: the full page, the `?embed=1` compact figure, and phone widths.

Columns sit in a wrapping FlexBox, so a narrow screen (or an 800 px iframe)
stacks them without a second layout.
"""

from __future__ import annotations

from urllib.parse import urlencode

import panel as pn
import param

from app import timelines
from app.address_bar import AddressBar
from app.early_steps import EarlySteps
from app.errors import logged
from app.keyboard import Keyboard
from app.playground.editor import PlaygroundEditor
from app.playground.store import is_playground
from app.state import SimulatorState
from app.url import LinkState, link_query, parse_link
from app.views.chain import ChainView
from app.views.code import CodeView
from app.views.controls import Controls, scenario_options
from app.views.hashmap import HashMapView
from app.views.header import EmbedHeaderView, HeaderView
from app.views.log import LogView
from app.views.metrics import MetricsView
from app.views.narration import NarrationView
from app.views.notice import notice_pane
from app.views.offload import OffloadView
from app.views.pool import PoolView
from app.views.prefill import PrefillView
from app.views.queue import QueueView
from app.views.requests import RequestsView

PAGE_WIDTH = 1280
EMBED_WIDTH = 800


class App(pn.viewable.Viewer):
    state = param.ClassSelector(class_=SimulatorState)
    embed = param.Boolean(default=False)

    def __init__(self, link: LinkState | None = None, **params: object) -> None:
        link = link or LinkState("", "", 0)
        if "state" not in params:
            params["state"] = SimulatorState()
        super().__init__(embed=link.embed, **params)
        if link.scenario:
            self.state.open(link.scenario, link.mode, link.step)
        state = self.state
        self.controls = Controls(state=state)
        self.pool = PoolView(state=state)
        self.queue = QueueView(state=state)
        self.hash_map = HashMapView(state=state)
        self.requests = RequestsView(state=state)
        self.log = LogView(state=state)
        self.code = CodeView(state=state)
        self.narration = NarrationView(state=state)
        self.offload = OffloadView(state=state)
        self.metrics = MetricsView(state=state)
        self.chain = ChainView(state=state)
        self.prefill = PrefillView(state=state)
        self.keyboard = Keyboard()
        self.address_bar = AddressBar(width=0, height=0, margin=0)
        self.early_steps = EarlySteps(
            query=self.opened_query(),
            lasts=state.lasts,
            default_scenario=timelines.default_scenario(),
            width=0,
            height=0,
            margin=0,
        )
        self.playground = PlaygroundEditor(state=state)
        self.open_playground = pn.widgets.Button(label="Edit a copy", width=170)
        self.open_playground.on_click(logged(lambda _: self.playground.open_fork()))
        state.param.watch(self._show_playground_button, "scenario")
        self._show_playground_button()
        self.header = EmbedHeaderView(state=state) if self.embed else HeaderView(state=state)
        self.notice = notice_pane(link.notices)
        self._left_playground: dict[str, str] = {}
        self._layout = self._build()

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
        )
        right = pn.Column(
            self.code,
            self.metrics,
            self.log,
            self.prefill,
            sizing_mode="stretch_width",
            min_width=300,
            margin=(0, 0, 0, 6),
            styles={"flex": "1 1 440px", "gap": "8px"},
        )
        width = EMBED_WIDTH if self.embed else PAGE_WIDTH
        return pn.Column(
            self.header,
            self.notice,
            self.controls,
            self.open_playground,
            self.playground,
            self.narration,
            pn.FlexBox(
                left,
                right,
                flex_wrap="wrap",
                sizing_mode="stretch_width",
                align_items="flex-start",
                margin=(8, 0, 0, 0),
            ),
            self.keyboard,
            self.address_bar,
            self.early_steps,
            sizing_mode="stretch_width",
            max_width=width,
            styles={"margin": "0 auto", "gap": "8px"},
            margin=(4, 10) if self.embed else (10, 16),
            css_classes=["prefix-cache-lab", "embed" if self.embed else "page"],
        )

    def _show_playground_button(self, *_: object) -> None:
        """Edit a copy: on every scenario but a playground, in the full page; the
        scenario picker lists the open playground too."""
        name = self.state.scenario
        self.open_playground.visible = not (self.embed or is_playground(name))
        options = scenario_options()
        if is_playground(name):
            options.append([name, f"Playground: {timelines.scenario(name).title}"])
        self.controls.scenario.param.update(options=options, value=name)

    def opened_query(self) -> str:
        """The address of the state the app opened at (with the layout it chose)."""
        query = link_query(self.state.scenario, self.state.mode, self.state.step)
        return urlencode({**query, **({"embed": "1"} if self.embed else {})})

    def follow_url(self) -> None:
        """Keep the address bar on the learner's state, so the link can be shared,
        and open the state of an address the learner goes Back or Forward to."""

        def update(*_: object) -> None:
            query = link_query(self.state.scenario, self.state.mode, self.state.step)
            if "playground" in query:
                self._left_playground = {"playground": ""}  # the address bar keeps other keys
            self.address_bar.query = urlencode({**self._left_playground, **query})

        @logged
        def reopen(query: str) -> None:
            link = parse_link(query)  # an entry this app wrote: valid, or corrected
            with pn.io.hold():
                self.state.open(link.scenario, link.mode, link.step)

        self.state.param.watch(update, ["scenario", "mode", "step"])
        self.address_bar.on_pop = reopen
        update()

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
