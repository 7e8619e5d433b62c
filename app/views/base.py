"""A view = a pure `render(timeline, step)`, shown through a StepDeck.

Every step's HTML, in every mode of the scenario, is rendered when the
scenario opens and sent once; the step controls and the mode picker then move
every deck in the browser (see step_deck.py). A large timeline (blocks x steps
from SENT_AROUND_FROM) is rendered a few steps at a time, around the step shown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import panel as pn
import param

from app.components.step_deck import Deck, StepDeck
from app.errors import logged
from app.state import SimulatorState
from app.stylesheets import stylesheet
from app.theme import CSS
from app.timelines import timeline_key
from engine.lab.timeline import Timeline

# How a glossary term looks inside a view (app/render/glossary.py writes the links).
TERM_CSS = stylesheet("app.views", "term.css")
# The embed's denser spacing (layout.py), on top of the app's stylesheet.
COMPACT_CSS = stylesheet("app.views", "compact.css")
# A timeline of at least this many blocks x steps is sent a few steps at a time: a
# 10,000-block pool's page is megabytes, and every step of it would be gigabytes.
# Every built-in scenario is far below (at most about 1,100).
SENT_AROUND_FROM = 20_000


class HoldsPages(Protocol):
    """A browser component that holds pages per position (a StepDeck, the code panel,
    the quiz) and shows the one at its `key` and `step`."""

    param: Any

    def holds_page(self, key: str, step: int) -> bool: ...


def move_or_render(deck: HoldsPages, key: str, step: int, render: Callable[[], None]) -> None:
    """A new position: one whose page the deck holds (another mode of the open scenario)
    only moves the deck there; any other (a new scenario, or a step of a large timeline
    not sent yet) has `render` fill it."""
    if deck.holds_page(key, step):
        deck.param.update(key=key, step=step)
    else:
        render()


def sends_every_step(timeline: Timeline) -> bool:
    """Whether a deck holds every step of the timeline (below SENT_AROUND_FROM) or only
    the pages around the shown step."""
    return timeline.num_gpu_blocks * len(timeline.steps) < SENT_AROUND_FROM


def sent_steps(timeline: Timeline, step: int) -> range:
    """The steps whose pages the deck holds while `step` is shown."""
    if sends_every_step(timeline):
        return range(len(timeline.steps))
    return range(max(0, step - 1), min(len(timeline.steps), step + 2))


def render_deck(
    render: object, timelines: tuple[Timeline, ...], shown: str = "", step: int = 0
) -> Deck:
    """Every step of every timeline; of a large timeline only the steps around ``step``
    if it is the ``shown`` one (its other steps, and a large timeline not shown, wait)."""
    assert callable(render)
    per_timeline: dict[str, list[str | None]] = {}
    for timeline in timelines:
        key = timeline_key(timeline)
        sent = sent_steps(timeline, step) if key == shown or sends_every_step(timeline) else ()
        per_timeline[key] = [
            render(timeline, s) if s in sent else None for s in range(len(timeline.steps))
        ]
    return Deck.of(per_timeline)


class StepView(pn.viewable.Viewer):
    """Renders `render(timeline, step)`; subclasses only write that pure function."""

    state = param.ClassSelector(class_=SimulatorState)
    compact = param.Boolean(default=False, doc="The embed's denser spacing")

    stylesheet: str = CSS
    css_class: str = ""

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._deck = StepDeck(
            sizing_mode="stretch_width",
            stylesheets=[self.stylesheet, TERM_CSS, *([COMPACT_CSS] if self.compact else [])],
            css_classes=[self.css_class] if self.css_class else [],
            margin=0,
        )
        self._timeline: Timeline | None = None
        self.state.param.watch(self._refresh, ["timeline", "step"])
        self._refresh()

    @staticmethod
    def render(timeline: Timeline, step: int) -> str:
        raise NotImplementedError

    @logged
    def _refresh(self, *_: object) -> None:
        timeline = self.state.timeline
        assert timeline is not None
        # A large timeline's deck holds a few steps: a step moved to may need its page.
        if timeline is self._timeline and self._deck.holds_page(self.state.key, self.state.step):
            return
        self._timeline = timeline
        move_or_render(self._deck, self.state.key, self.state.step, self._render_deck)

    def _render_deck(self) -> None:
        state = self.state
        deck = render_deck(self.render, state.scenario_timelines, state.key, state.step)
        # A view with nothing to show in the whole scenario leaves the layout (a large
        # timeline's deck cannot know: an empty page hides it in the browser).
        self._deck.visible = any(deck.pages) or not all(
            sends_every_step(t) for t in state.scenario_timelines
        )
        self._deck.load(deck, self.state.key, self.state.step)

    @property
    def html(self) -> str:
        """What the browser shows at the current step (for tests)."""
        return self._deck.page(self.state.key, self.state.step)

    @property
    def visible(self) -> bool:
        return bool(self._deck.visible)

    def __panel__(self) -> pn.viewable.Viewable:
        return self._deck
