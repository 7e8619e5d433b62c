"""What a set of timelines (a scenario's modes, an edit's playground) sends to the page,
as one pure function with no Panel (format: docs/document.md): every view's distinct
pages and per-step orders, the code panel's part, the questions, and what the player
needs to open it. A step not sent is JSON null (NOT_SENT): a large timeline
(SENT_AROUND_FROM) sends only the steps around the one shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict

from app.data.timelines import scenario, split_key, timeline_key
from app.data.url import timeline_query
from app.playground.store import is_playground
from app.render.engines import AnyTimeline, on_engine
from engine.lab.play.questions import all_questions

# The document's format (docs/document.md): a page reads only the version it was written for.
DOCUMENT_VERSION = 1
# A timeline of at least this many blocks x steps is sent a few steps at a time: every
# page of every view of every mode of a 10,000-block playground of 247 steps is about
# 30 s of rendering and 100 MB (its queue and header alone about 20 ms a page).
# Every built-in scenario is far below (at most about 1,100).
SENT_AROUND_FROM = 20_000

Render = Callable[[AnyTimeline, int], str]


# In an order: this step's page is not in the browser yet (JSON null); the view's slot
# keeps showing what it shows until Python sends it (deck_slot.js).
NOT_SENT = None


def sends_every_step(timeline: AnyTimeline) -> bool:
    """Whether the page gets every step of the timeline (the pool's cells a page draws
    times its steps below SENT_AROUND_FROM) or only the steps around the shown one."""
    cells = on_engine(timeline, lambda t: t.num_gpu_blocks, lambda t: t.num_slots // t.page_size)
    return cells * len(timeline.steps) < SENT_AROUND_FROM


def steps_around(timeline: AnyTimeline, step: int) -> range:
    """The shown step and its neighbours: what the page holds of a large timeline, and
    what it gets first of any."""
    return range(max(0, step - 1), min(len(timeline.steps), step + 2))


def sent_steps(timeline: AnyTimeline, at: tuple[str, int], around_only: bool = False) -> range:
    """The steps of ``timeline`` a bundle holds: every step, or (a large timeline, or any
    with ``around_only``) the steps around ``at`` if it is the shown one, else none."""
    if sends_every_step(timeline) and not around_only:
        return range(len(timeline.steps))
    key, step = at
    return steps_around(timeline, step) if timeline_key(timeline) == key else range(0)


def render_deck(
    render: Render,
    timelines: tuple[AnyTimeline, ...],
    at: tuple[str, int] = ("", 0),
    around_only: bool = False,
) -> dict[str, Any]:
    """One view's deck: its distinct pages of every timeline, each once ("pages"), and
    per timeline key the index of each step's page ("orders"); a step not sent (sent_steps)
    is NOT_SENT: a large timeline's deck holds only the steps around ``at``."""
    index: dict[str, int] = {}
    orders: dict[str, tuple[int | None, ...]] = {}
    for timeline in timelines:
        sent = sent_steps(timeline, at, around_only)
        orders[timeline_key(timeline)] = tuple(
            index.setdefault(render(timeline, s), len(index)) if s in sent else NOT_SENT
            for s in range(len(timeline.steps))
        )
    return {"pages": tuple(index), "orders": orders}


def bundle(
    timelines: tuple[AnyTimeline, ...],
    views: Mapping[str, Render],
    at: tuple[str, int],
    around_only: bool = False,
    *,
    code: bool = True,
    questions: bool = True,
    held: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> dict[str, Any]:
    """What ``timelines`` send to the page with the learner at ``at`` (timeline key,
    step): ``views`` (name -> pure render) each as distinct pages and per-step orders,
    the code panel's frames, bodies and plans (``code``; ``held``: the frames and bodies
    the browser holds, kept at their indices), the questions per step (``questions``),
    the steps it holds of each timeline ([first, end): sent_steps) and for the player
    what names the timelines (``named``). ``around_only``: every timeline as if it were
    large (the first part of a bundle whose rest follows on the next tick)."""
    keyed = {timeline_key(t): t for t in timelines}
    steps = {key: sent_steps(t, at, around_only) for key, t in keyed.items()}
    sent: dict[str, Any] = {
        "views": {
            name: render_deck(each, timelines, at, around_only) for name, each in views.items()
        },
        "held": {key: [held.start, held.stop] for key, held in steps.items()},
        **named({key: len(t.steps) - 1 for key, t in keyed.items()}, at[0]),
    }
    if code:
        # (imported here: the code panel needs pygments, which the static site's worker
        # has not installed when it answers a playground link's early page)
        from app.render.code_plan import CodePlan

        plan = CodePlan.of(keyed, lambda t: steps[timeline_key(t)], *held)
        sent["code"] = {"frames": plan.frames, "plans": plan.as_dicts()}
        sent["bodies"] = plan.bodies
    if questions:
        sent["questions"] = {key: all_questions(t) for key, t in keyed.items()}
    return sent


class Named(TypedDict):
    """What names a set of timelines for the player (docs/document.md)."""

    scenario: list[str]  # [name, title]
    lasts: dict[str, int | None]  # timeline key -> last step (None: not played yet)
    queries: dict[str, dict[str, str]]  # timeline key -> the address parameters naming it


class DocumentHead(Named):
    """A document's fields besides its pages (docs/document.md)."""

    version: int  # DOCUMENT_VERSION
    serial: int  # its number on the page
    at: list[Any]  # [timeline key, step]: where it opens
    keep: bool  # an edit's: the page keeps its mode and step where the document has them
    held: dict[str, list[int]]  # timeline key -> [first, end) of the steps it holds


def named(lasts: Mapping[str, int | None], key: str) -> Named:
    """The scenario's [name, title], each timeline's last step (``lasts``: None where a
    playground's mode is not counted yet) and the address parameters that name it; ``key``
    names the scenario of a set with none (a prebuilt document's head)."""
    opened = split_key(next(iter(lasts), key))[0]
    return Named(
        scenario=[opened, scenario_title(opened)] if opened else [],
        lasts=dict(lasts),
        queries={key: timeline_query(*split_key(key)) for key in lasts},
    )


def document_head(
    at: tuple[str, int],
    serial: int,
    lasts: Mapping[str, int | None],
    held: Mapping[str, list[int]],
    keep: bool = False,
) -> DocumentHead:
    """A document's head for a set of timelines opened at ``at`` (``keep``: where the page
    is, if it holds that mode), with the steps it holds of each (``held``)."""
    return DocumentHead(
        version=DOCUMENT_VERSION,
        serial=serial,
        at=list(at),
        keep=keep,
        held=dict(held),
        **named(lasts, at[0]),
    )


def scenario_title(name: str) -> str:
    """The scenario's title as the picker shows it."""
    title = scenario(name).title
    return f"Playground: {title}" if is_playground(name) else title
