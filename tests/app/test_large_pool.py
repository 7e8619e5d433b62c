"""A playground of thousands of blocks: readable views, and decks that hold a few steps."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from itertools import pairwise
from typing import Any, ClassVar

import panel as pn
import pytest
from bokeh.document import Document
from panel.io.document import MockSessionContext
from panel.io.state import set_curdoc

from app.data.bundle import sends_every_step
from app.data.timelines import timeline_key
from app.data.url import parse_link
from app.page.layout import App
from app.playground import store
from app.render import hashmap as hashmap_render
from app.render.code_plan import code_parts
from app.render.hashmap import EDGE as MAP_EDGE
from app.render.hashmap import render_hash_map
from app.render.pool import RUNS_FROM, changed_blocks, render_pool
from app.render.queue import render_queue
from app.views import sender as sending
from app.views.base import StepView
from app.views.code import CodeView
from app.views.sender import REST_AFTER_S, Sender
from app.views.state import SimulatorState
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from tests.app.conftest import Element, parse

BLOCKS = 2_000


def large_data(requests: int = 40) -> dict[str, object]:
    """Requests sharing a 64-token prefix, arriving ten at a time between engine steps."""
    steps: list[dict[str, object]] = []
    for i in range(requests):
        first = 1_000 + 40 * i
        prompt = f"1..64, {first}..{first + 39}"
        steps.append({"do": "add_request", "id": f"R{i}", "prompt": prompt, "max_tokens": 6})
        if i % 10 == 9:
            steps.append({"do": "step", "count": 2})
    steps.append({"do": "run_until_idle"})
    return {"title": "large", "pool": {"num_gpu_blocks": BLOCKS, "block_size": 16}, "steps": steps}


@pytest.fixture(scope="module")
def large() -> Timeline:
    return build_timeline(store.register(large_data()).scenario, "default", trace=False)


def queue_items(timeline: Timeline, step: int) -> list[Element]:
    return parse(render_queue(timeline, step)).find_all(data_testid="free-queue")[0].children


def test_a_long_free_queue_is_runs_of_ids_its_ends_and_its_marked_blocks(large: Timeline) -> None:
    for step in range(len(large.steps)):
        queue = large.steps[step].snapshot.free_queue
        items = queue_items(large, step)
        assert len(items) <= 80  # not one item per free block
        at = 0  # walk the queue in order: every block is shown or counted, none twice
        for li in items:
            if "data-gap" in li.attrs:
                at += int(li.attrs["data-gap"])
            elif "data-first" in li.attrs:
                first, last = int(li.attrs["data-first"]), int(li.attrs["data-last"])
                assert list(queue[at : at + last - first + 1]) == list(range(first, last + 1))
                assert f"{first} to {last}" in li.text
                at += last - first + 1
            else:
                assert int(li.attrs["data-block-id"]) == queue[at]
                at += 1
        assert at == len(queue)
        assert "data-gap" not in items[0].attrs and "data-gap" not in items[-1].attrs
        marked = {int(li.attrs["data-block-id"]) for li in items if li.attrs.get("data-change")}
        before = large.steps[step - 1].snapshot.free_queue if step else queue
        assert set(queue) - set(before) <= marked  # every block that arrived is in view


def test_a_pool_of_thousands_is_runs_of_look_alike_blocks_covering_every_block(
    large: Timeline,
) -> None:
    assert BLOCKS >= RUNS_FROM
    for step in range(len(large.steps)):
        blocks = large.steps[step].snapshot.blocks
        changed = changed_blocks(large, step)
        pool = parse(render_pool(large, step)).find_all(data_testid="pool")[0]
        items = next(e for e in pool.children if e.tag == "ol").children
        assert len(items) <= len(blocks) // 10  # not one cell per block
        kinds, at = [], 0  # walk the pool in order: every block in one item, none twice
        for li in items:
            if "data-first" in li.attrs:
                first, last = int(li.attrs["data-first"]), int(li.attrs["data-last"])
                assert first == at and last > first
                assert f"#{first:,} to #{last:,}" in li.text
                shown = (li.attrs["data-state"], li.attrs["data-ref-cnt"], li.attrs["data-changed"])
                for b in blocks[first : last + 1]:
                    assert (b.state, str(b.ref_cnt), str(b.block_id in changed).lower()) == shown
                at = last + 1
            else:  # a block alone, drawn as in a smaller pool (its hash in the cell)
                b = blocks[at]
                assert li.attrs["data-testid"] == f"block-{at}"
                assert li.attrs["data-hash"] == (b.hash_label or "")
                shown = (li.attrs["data-state"], li.attrs["data-ref-cnt"], li.attrs["data-changed"])
                assert shown == (b.state, str(b.ref_cnt), str(at in changed).lower())
                at += 1
            kinds.append(shown)
        assert at == len(blocks)
        assert all(a != b for a, b in pairwise(kinds))  # runs are whole
    assert any(changed_blocks(large, s) for s in range(len(large.steps)))


def test_a_long_hash_map_shows_its_ends_and_every_entry_changed_at_the_step(
    large: Timeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This timeline's map holds fewer entries than the built-in threshold: the mechanism
    # is tested with a lower one.
    monkeypatch.setattr(hashmap_render, "FULL_UP_TO", 4 * MAP_EDGE)
    longest = max(range(len(large.steps)), key=lambda s: len(large.steps[s].snapshot.hash_map))
    for step in (longest, len(large.steps) - 1):
        entries = large.steps[step].snapshot.hash_map
        assert len(entries) > 4 * MAP_EDGE
        rows = parse(render_hash_map(large, step)).find_all(data_testid="hash-map")[0]
        body = [
            r
            for r in rows.iter()
            if r.tag == "tr" and ("data-hash" in r.attrs or "data-gap" in r.attrs)
        ]
        shown, at = [], 0
        for row in body:
            if "data-gap" in row.attrs:
                at += int(row.attrs["data-gap"])
            else:
                assert row.attrs["data-hash"] == entries[at].hash_label
                shown.append(at)
                at += 1
        assert at == len(entries)
        ends = {*range(MAP_EDGE), *range(len(entries) - MAP_EDGE, len(entries))}
        assert ends <= set(shown)
        before = {e.block_hash: e for e in large.steps[step - 1].snapshot.hash_map}
        changed = {i for i, e in enumerate(entries) if before.get(e.block_hash) != e}
        assert changed <= set(shown)
        assert len(shown) < len(entries)


class CountingView(StepView):
    rendered: ClassVar[list[int]] = []

    @staticmethod
    def render(timeline: Timeline, step: int) -> str:
        CountingView.rendered.append(step)
        return f"<p>step {step}</p>"


def test_a_large_timelines_deck_renders_the_steps_around_the_shown_one_only() -> None:
    name = store.register(large_data()).scenario.name
    state = SimulatorState()
    state.open(name, "default", 5)
    assert state.timeline is not None and not sends_every_step(state.timeline)
    CountingView.rendered = []
    view = CountingView(state=state)
    assert sorted(CountingView.rendered) == [4, 5, 6]
    assert view.html == "<p>step 5</p>"
    state.step = 6  # held already; the step after it is rendered ahead, and only it
    assert view.html == "<p>step 6</p>" and CountingView.rendered[3:] == [7]
    assert view.sender.holds(state.key, 7) and not view.sender.holds(state.key, 4)
    state.step = 30
    assert view.html == "<p>step 30</p>"
    assert sorted(CountingView.rendered[4:]) == [29, 30, 31]


def test_a_small_timelines_deck_holds_every_step_of_every_mode() -> None:
    state = SimulatorState()
    state.open("reset", "default", 0)
    CountingView.rendered = []
    CountingView(state=state)
    assert len(CountingView.rendered) == sum(len(t.steps) for t in state.scenario_timelines)


def test_a_new_deck_shows_its_step_first_and_gets_every_other_page_a_moment_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a server (or in Pyodide) the shown step and its neighbours go out at once and
    the other pages a moment later: an edit's views change sooner."""
    monkeypatch.setattr(sending, "defers_rest", lambda: True)  # as on a server
    state = SimulatorState()
    state.open("reset", "keep", 3)

    async def open_view() -> tuple[list[int], list[int], bool]:
        CountingView.rendered = []
        view = CountingView(state=state)
        first = sorted(CountingView.rendered)
        held_at_once = all(view.sender.holds(state.key, s) for s in range(state.last_step + 1))
        await asyncio.sleep(REST_AFTER_S + 0.1)
        return first, sorted(CountingView.rendered), held_at_once

    first, after, held_at_once = asyncio.run(open_view())
    assert first == [2, 3, 4] and not held_at_once
    # Every step of every mode once: the first pages are not rendered again.
    expected = sorted(s for t in state.scenario_timelines for s in range(len(t.steps)))
    assert after == expected


def test_the_code_panel_gets_the_shown_steps_code_first_and_every_step_a_moment_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As the views' pages: the shown step and its neighbours at once, every step of
    every mode after REST_AFTER_S, with the first frames and bodies at the same indices
    (the browser's plans stay right while the rest arrives)."""
    monkeypatch.setattr(sending, "defers_rest", lambda: True)  # as on a server
    state = SimulatorState()
    state.open("reset", "keep", 3)

    def planned(sender: Sender) -> list[list[bool]]:
        plans = sender.sent["code"]["plans"]
        return [[p is not None for p in plans[timeline_key(t)]] for t in state.scenario_timelines]

    async def open_view() -> tuple[list[list[bool]], list[str], list[list[bool]], Any]:
        view = CodeView(state=state)
        held = planned(view.sender)
        first_frames = list(view.sender.sent["code"]["frames"])
        await asyncio.sleep(REST_AFTER_S + 0.1)
        return held, first_frames, planned(view.sender), view.sender.sent["code"]

    held, first_frames, after, code = asyncio.run(open_view())
    keys = [timeline_key(t) for t in state.scenario_timelines]
    shown = keys.index(state.key)
    assert [s for s, h in enumerate(held[shown]) if h] == [2, 3, 4]
    assert not any(h for i, row in enumerate(held) if i != shown for h in row)
    assert all(all(row) for row in after)
    assert list(code["frames"][: len(first_frames)]) == first_frames
    timeline = state.timeline
    assert timeline is not None
    at = code["plans"][state.key][3]
    assert code["frames"][at["frame"]] == code_parts(timeline, 3).frame


def test_every_deck_of_the_app_follows_a_large_timelines_step() -> None:
    """The hash chain and the prefill calculator too get the pages around a step moved
    to (they once rendered every step; now they hold three, like the other views)."""
    code = store.register(large_data()).code
    app = App(link=parse_link(f"?scenario=playground&playground={code}"))
    state = app.state
    assert state.timeline is not None and not sends_every_step(state.timeline)
    decks = list(app.sender.decks)
    assert len(decks) >= 10 and {"chain", "prefill"} <= set(decks)
    state.step = 30
    held = {view: app.sender.decks[view].orders[state.key][30] for view in decks}
    assert [view for view, page in held.items() if page is None] == []


def test_a_document_without_callbacks_holds_every_page() -> None:
    """A document whose stand-in session never runs a callback (as the builder's, which
    makes the static site's early pages) gets every deck whole: a deck there could not
    wait for a rest that never comes."""
    document = Document()
    document._session_context = lambda: MockSessionContext(document=document)  # type: ignore[assignment]
    with set_curdoc(document):
        assert not sending.defers_rest()
        state = SimulatorState()
        state.open("reset", "keep", 0)
        view = CountingView(state=state)
        assert all(view.sender.holds(state.key, s) for s in range(state.last_step + 1))


@contextlib.contextmanager
def flagship_as_on_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[App, list[Any], Document]]:
    """The flagship at keep's step 3 loading as on a server, its scheduled tasks (the
    rests) collected to be run by the test."""
    scheduled: list[Any] = []
    monkeypatch.setattr(pn.state, "execute", scheduled.append)
    monkeypatch.setattr(sending, "defers_rest", lambda: True)
    document = Document()
    with set_curdoc(document):
        yield App(link=parse_link("?scenario=reset&mode=keep&step=3")), scheduled, document


def test_the_rest_of_every_part_reaches_the_browser_together_as_one_update(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every view's other pages and the code's other steps go out together, in one hold
    (one message), once: the rests of the earlier first parts are not sent again."""
    with flagship_as_on_a_server(monkeypatch) as (app, scheduled, document):
        app.page.received = app.sender.outbox.written  # the page holds it
        writes: list[tuple[int, bool]] = []
        for task, each in enumerate(scheduled):
            watcher = app.page.param.watch(
                lambda _, t=task: writes.append((t, bool(document.callbacks.hold_value))), "bundle"
            )
            asyncio.run(each())
            app.page.param.unwatch(watcher)
    assert len(scheduled) > 1 and writes == [(len(scheduled) - 1, True)]
    sent = json.loads(app.page.bundle)
    assert {"PoolView", "NarrationView", "chain", "prefill"} <= set(sent["views"])
    assert all(None not in order for order in sent["views"]["PoolView"]["orders"].values())
    assert all(None not in plan for plan in sent["code"]["plans"].values())
    assert all(app.sender.holds(app.state.key, s) for s in range(app.state.last_step + 1))


def test_the_rest_waits_for_the_page_to_hold_the_first_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A write made while the page is still taking its document can be dropped by the
    page: the rest goes out only once the page says it holds the first part, and then
    whole (every step held, as Python believes)."""
    with flagship_as_on_a_server(monkeypatch) as (app, scheduled, _document):
        player, outbox = app.page, app.sender.outbox
        first = outbox.written
        while scheduled:
            asyncio.run(scheduled.pop(0)())
        assert outbox.written == first  # nothing sent before the page answered
        assert not app.sender.holds(app.state.key, 0)
        player.received = first
        assert len(scheduled) == 1
        asyncio.run(scheduled.pop()())
    assert outbox.written == first + 1
    sent = json.loads(player.bundle)
    assert all(None not in order for order in sent["views"]["PoolView"]["orders"].values())
    assert all(app.sender.holds(app.state.key, s) for s in range(app.state.last_step + 1))


def test_in_pyodide_the_rest_waits_only_once_the_page_is_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The static site's early page hands over to a live page whose decks hold every
    step; after that, an edit's other pages come a moment later there too."""
    monkeypatch.setattr(sys, "platform", "emscripten")  # (app/host/runtime.py)
    document = Document()
    with set_curdoc(document):
        assert not sending.defers_rest()
        sending.mark_page_up()
        assert sending.defers_rest()
    with set_curdoc(Document()):
        assert not sending.defers_rest()  # another page, not up yet


def test_a_long_prompts_block_list_folds_as_the_pools_does() -> None:
    """A 16,384-token prompt holds 1,024 blocks: the requests table shows a few chips, each
    block shown in a run or counted in a gap, in order, not a badge per block."""
    from app.render.requests import render_requests

    data = {
        "title": "long prompt",
        "pool": {"num_gpu_blocks": BLOCKS, "block_size": 16},
        "steps": [
            {"do": "add_request", "id": "S", "prompt": "1..40"},
            {"do": "add_request", "id": "L", "prompt": "1..16384", "max_tokens": 2},
            {"do": "step", "count": 3},
        ],
    }
    timeline = build_timeline(store.register(data).scenario, "default", trace=False)

    def held(i: int) -> tuple[int, ...]:
        return next(r.block_ids for r in timeline.steps[i].snapshot.requests if r.request_id == "L")

    step = max(range(2, len(timeline.steps)), key=lambda i: len(held(i)))
    ids = held(step)
    assert len(ids) == 1_024
    row = parse(render_requests(timeline, step)).find_all(data_request_id="L")[0]
    chips = [e for e in row.iter() if "chip" in e.attrs.get("class", "").split()]
    assert 1 <= len(chips) <= 17  # the first and last 8 runs at most, a gap between
    at = 0
    for chip in chips:
        if "data-gap" in chip.attrs:
            at += int(chip.attrs["data-gap"])
        elif "data-first" in chip.attrs:
            first, last = int(chip.attrs["data-first"]), int(chip.attrs["data-last"])
            assert list(ids[at : at + last - first + 1]) == list(range(first, last + 1))
            assert f"#{first} to #{last}" in chip.text
            at += last - first + 1
        else:
            assert chip.text == f"#{ids[at]}"
            at += 1
    assert at == len(ids)
    short = parse(render_requests(timeline, step)).find_all(data_request_id="S")[0]
    assert [e.text for e in short.iter() if "chip" in e.attrs.get("class", "").split()] == [
        f"#{b}" for b in timeline.steps[step].snapshot.requests[0].block_ids
    ]


def test_a_large_playgrounds_modes_not_counted_come_after_its_first_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counting a mode of a large playground plays it: an edit's first write names every
    mode, the ones not counted yet with no last step, so the shown step's pages do not
    wait for those plays; once the page holds that write, the same position (its serial)
    comes again with every mode's last step. (A small playground's come at once:
    tests/app/test_playground.py.)"""
    scheduled: list[Any] = []
    monkeypatch.setattr(pn.state, "execute", scheduled.append)
    monkeypatch.setattr(sending, "defers_rest", lambda: True)
    monkeypatch.setattr(store, "_last_steps", type(store._last_steps)())  # none counted
    code = store.register(large_data()).code
    app = App(link=parse_link(f"?scenario=playground&playground={code}"))
    app.page.received = app.sender.outbox.written
    for each in scheduled:
        asyncio.run(each())
    scheduled.clear()
    app.playground.num_gpu_blocks.value_input = str(BLOCKS - 1)  # an edit: another pool
    state, player = app.state, app.page
    first = player.position
    assert first["at"] == [state.key, state.step] and first["lasts"][state.key] == state.last_step
    uncounted = {k for k, last in first["lasts"].items() if last is None}
    assert uncounted and state.key not in uncounted
    assert set(first["lasts"]) == {f"{state.scenario}/{m}" for m in state.modes}
    player.received = app.sender.outbox.written  # the page holds the first write
    for each in scheduled:
        asyncio.run(each())
    assert player.position["serial"] == first["serial"]
    assert player.position["lasts"] == {
        f"{state.scenario}/{m}": store.last_step(state.scenario, m) for m in state.modes
    }
