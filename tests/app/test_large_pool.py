"""A playground of thousands of blocks: readable views, and decks that hold a few steps."""

from __future__ import annotations

from itertools import pairwise
from typing import ClassVar

import pytest

from app.data.bundle import sends_every_step
from app.data.url import parse_link
from app.page.layout import App
from app.playground import store
from app.render import pool as pool_render
from app.render.code_plan import code_parts
from app.render.pool import MAP_EDGE, RUNS_FROM, changed_blocks, render_hash_map, render_pool
from app.render.queue import render_queue
from app.views.base import StepView
from app.views.state import SimulatorState
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from tests.app.conftest import Element, parse
from tests.app.test_playground import edit

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
    monkeypatch.setattr(pool_render, "MAP_FULL_UP_TO", 4 * MAP_EDGE)
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
    assert CountingView.rendered == []  # (made with the first document, or when asked)
    assert view.html == "<p>step 5</p>"
    assert sorted(CountingView.rendered) == [4, 5, 6]
    key = state.key
    answer = view.sender.steps(key, 6)  # the page steps on and asks for what it lacks
    assert answer["held"] == {key: [5, 8]}
    assert view.sender.page("CountingView", key, 6) == "<p>step 6</p>"
    assert CountingView.rendered[3:] == [7]  # the step ahead, and only it
    assert view.sender.holds(key, 7) and not view.sender.holds(key, 4)
    view.sender.steps(key, 30)
    assert view.sender.page("CountingView", key, 30) == "<p>step 30</p>"
    assert sorted(CountingView.rendered[4:]) == [29, 30, 31]
    assert view.sender.steps("another/default", 3) == {}  # a timeline not open: nothing
    assert view.sender.steps(key, "x") == {}  # type: ignore[arg-type]


def test_a_small_timelines_deck_holds_every_step_of_every_mode() -> None:
    state = SimulatorState()
    state.open("reset", "default", 0)
    CountingView.rendered = []
    CountingView(state=state).sender.publish()
    assert len(CountingView.rendered) == sum(len(t.steps) for t in state.scenario_timelines)


def test_every_deck_of_the_app_follows_a_large_timelines_step() -> None:
    """The hash chain and the prefill calculator too get the pages around a step the page
    asks for (they once rendered every step; now they hold three, like the other views),
    and so does the code panel, its bodies kept at their indices."""
    code = store.register(large_data()).code
    app = App(link=parse_link(f"?scenario=playground&playground={code}"))
    state = app.state
    assert state.timeline is not None and not sends_every_step(state.timeline)
    decks = list(app.sender.decks)
    assert len(decks) >= 10 and {"chain", "prefill"} <= set(decks)
    bodies = list(app.page.opened["bodies"])
    answer = app.page.request({"ask": "steps", "key": state.key, "step": 30, "id": 9})
    assert answer["id"] == 9 and answer["serial"] == app.page.opened["serial"]
    assert set(answer["views"]) == set(decks)
    held = {view: deck["orders"][state.key][30] for view, deck in answer["views"].items()}
    assert [view for view, page in held.items() if page is None] == []
    assert answer["code"]["plans"][state.key][30] is not None
    assert list(answer["bodies"][: len(bodies)]) == bodies
    plan = answer["code"]["plans"][state.key][30]
    assert answer["code"]["frames"][plan["frame"]] == code_parts(state.timeline, 30).frame


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


def test_a_large_playgrounds_modes_not_counted_are_played_when_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counting a mode of a large playground plays it: an edit's document names every
    mode, the ones not counted yet with no last step, so the shown step's pages do not
    wait for those plays; the page asks for a mode it does not hold (`open`), and that
    mode's document counts it. (A small playground's are counted at once:
    tests/app/test_playground.py.)"""
    monkeypatch.setattr(store, "_last_steps", type(store._last_steps)())  # none counted
    code = store.register(large_data()).code
    app = App(link=parse_link(f"?scenario=playground&playground={code}"))
    edit(app, "num_gpu_blocks", str(BLOCKS - 1))  # an edit: another pool
    state, page = app.state, app.page
    first = page.opened
    assert first["at"] == [state.key, state.step] and first["lasts"][state.key] == state.last_step
    uncounted = {k for k, last in first["lasts"].items() if last is None}
    assert uncounted and state.key not in uncounted
    assert set(first["lasts"]) == {f"{state.scenario}/{m}" for m in state.modes}
    other = sorted(uncounted)[0]
    page.request({"ask": "mode", "mode": other.split("/")[1], "step": 3})  # picked at step 3
    opened = page.opened
    assert opened["at"] == [other, 3] and opened["keep"] is False
    assert opened["lasts"][other] == store.last_step(state.scenario, other.split("/")[1])
    assert list(opened["held"]) == [other]
