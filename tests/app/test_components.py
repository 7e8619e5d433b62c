"""Panel-level tests of the app, no browser: every view against the engine's timeline."""

from __future__ import annotations

import dataclasses
import html
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import panel as pn
import param
import pytest

from app.components.step_page import KEY_MOVES, StepPage
from app.data import timelines
from app.data.bundle import DOCUMENT_VERSION
from app.data.url import parse_link
from app.page.layout import App, empty_playground_href, scenario_options
from app.render.chain import COLLAPSE_FROM, EDGE, default_pair, render_chain
from app.render.code_plan import (
    CodePlan,
    Plan,
    code_parts,
    function_options,
    function_range,
    highlighted_lines,
    highlighted_range,
    variant_of,
)
from app.render.header import render_embed_header
from app.render.metrics import render_metrics
from app.render.narration import render_log, render_narration
from app.render.pool import changed_blocks, render_hash_map, render_offload, render_pool
from app.render.prefill import (
    SEED_FLOPS,
    model_texts,
    parse_inputs,
    render_prefill,
    seed_texts,
    step_request,
)
from app.render.queue import queue_marks, render_queue
from app.render.requests import render_requests
from app.views.chain import ChainView
from app.views.code import CodeView
from app.views.panels import HeaderView
from app.views.prefill import PrefillView
from app.views.state import SimulatorState
from engine.lab.play.line_tracer import FunctionTrace
from engine.lab.play.vllm.timeline import Timeline
from engine.lab.play.vllm.variants import CHANGES
from engine.lab.shared.prefill_cost import prefill_cost
from tests.app.conftest import parse

MODES = timelines.scenario("reset").modes
# One timeline in all (a scenario on both engines has two at least).
SINGLE_MODE = next(n for n in timelines.names() if len(timelines.modes(n)) == 1)


def all_steps() -> list[tuple[str, int]]:
    return [(m, i) for m in MODES for i in range(len(timelines.timeline("reset", m).steps))]


def reset(mode: str) -> Timeline:
    return timelines.timeline("reset", mode)


def plain(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


# -- views: each renders exactly the snapshot --------------------------------------------


@pytest.mark.parametrize(("mode", "step"), all_steps())
def test_pool_cells_are_the_snapshot(mode: str, step: int) -> None:
    timeline = reset(mode)
    snapshot = timeline.steps[step].snapshot
    cells = parse(render_pool(timeline, step)).with_attr("data-ref-cnt")
    assert [c.attrs["data-testid"] for c in cells] == [
        f"block-{b.block_id}" for b in snapshot.blocks
    ]
    for cell, block in zip(cells, snapshot.blocks, strict=True):
        assert cell.attrs["data-ref-cnt"] == str(block.ref_cnt)
        assert cell.attrs["data-state"] == block.state
        assert cell.attrs["data-hash"] == (block.hash_label or "")
        # state is also written as text, not colour alone
        assert cell.text.strip() != ""
    changed = {int(c.attrs["data-block-id"]) for c in cells if c.attrs["data-changed"] == "true"}
    assert changed == changed_blocks(timeline, step)


def test_changed_cells_follow_the_snapshots() -> None:
    timeline = reset("keep")
    # The keep reset clears the hashes of blocks 1..4 (B's held ones included).
    assert changed_blocks(timeline, 0) == set()
    before, after = timeline.steps[0].snapshot, timeline.steps[1].snapshot
    expected = {b.block_id for b, a in zip(before.blocks, after.blocks, strict=True) if a != b}
    assert expected and changed_blocks(timeline, 1) == expected


@pytest.mark.parametrize(("mode", "step"), all_steps())
def test_queue_hash_map_requests_and_log_are_the_snapshot(mode: str, step: int) -> None:
    timeline = reset(mode)
    snapshot = timeline.steps[step].snapshot

    queue = parse(render_queue(timeline, step)).find_all(data_testid="free-queue")[0]
    assert [int(li.attrs["data-block-id"]) for li in queue.children] == list(snapshot.free_queue)

    rows = parse(render_hash_map(timeline, step)).with_attr("data-block-id")
    assert [(r.attrs["data-hash"], r.attrs["data-block-id"]) for r in rows] == [
        (e.hash_label, " ".join(map(str, e.block_ids))) for e in snapshot.hash_map
    ]

    requests = parse(render_requests(timeline, step)).with_attr("data-request-id")
    assert [
        (
            r.attrs["data-request-id"],
            r.attrs["data-status"],
            r.attrs["data-computed"],
            r.attrs["data-block-ids"],
            r.attrs["data-preemptions"],
        )
        for r in requests
    ] == [
        (
            r.request_id,
            r.status,
            str(r.num_computed_tokens),
            " ".join(map(str, r.block_ids)),
            str(r.num_preemptions),
        )
        for r in snapshot.requests
    ]

    log = parse(render_log(timeline, step)).find_all(data_testid="log")[0]
    lines = [e.text for e in log.iter() if e.attrs.get("class", "").startswith("line")]
    assert lines == [str(line) for line in timeline.logs_until(step)]


def queue_changes(timeline: Timeline, step: int) -> dict[int, str]:
    queue = parse(render_queue(timeline, step)).find_all(data_testid="free-queue")[0]
    return {
        int(li.attrs["data-block-id"]): li.attrs["data-change"]
        for li in queue.children
        if li.attrs.get("data-change")
    }


def test_queue_marks_blocks_that_moved_as_well_as_blocks_that_arrived() -> None:
    # eviction-order step 8: R4 takes the head (#6 to #9, then #2), caches them all and
    # finishes: they are free before and after, but now behind R2's #4 and #3.
    timeline = timelines.timeline("eviction-order", "default")
    assert timeline.steps[7].snapshot.free_queue == (6, 7, 8, 9, 2, 4, 3)
    assert timeline.steps[8].snapshot.free_queue == (4, 3, 2, 9, 8, 7, 6)
    assert queue_changes(timeline, 8) == {b: "moved" for b in (2, 9, 8, 7, 6)}
    assert "5 moved" in plain(render_queue(timeline, 8))
    # step 2: R1 takes #1 to #3 from the head and frees them within the step: the
    # cached #2 and #1 move to the tail, the partial #3 comes back to the head.
    assert queue_changes(timeline, 2) == {1: "moved", 2: "moved", 3: "returned"}


def test_queue_marks_a_block_taken_and_freed_in_place() -> None:
    # reset step 8: C takes #8 from the head and frees it back there in the same step;
    # #7 arrives at the tail.
    timeline = reset("default")
    assert queue_changes(timeline, 8) == {8: "returned", 7: "arrived"}
    title = parse(render_queue(timeline, 8)).find_all(data_block_id="8")[0].attrs["title"]
    assert "taken and freed within this step" in title


def test_a_hit_out_of_the_middle_moves_nobody() -> None:
    assert queue_marks([5, 6, 7, 1, 2], [5, 6, 7, 2]) == (set(), set())
    assert queue_marks([1, 2, 3, 4], [3, 1, 2, 4]) == (set(), {3})
    assert queue_marks([1, 2], [1, 2, 9]) == ({9}, set())


def test_default_reset_is_refused_and_logged() -> None:
    timeline = reset("default")
    text = parse(render_log(timeline, 1)).text
    assert "Failed to reset prefix cache" in text
    assert "→ False" in plain(render_narration(timeline, 1))


# -- code panel -------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "step"), all_steps())
def test_code_panel_marks_the_lines_that_ran(mode: str, step: int) -> None:
    timeline = reset(mode)
    current = timeline.steps[step]
    parts = code_parts(timeline, step)
    panel = parse(parts.html)
    if current.focus is None:
        assert not panel.with_attr("data-line") and parts.current == -1
        return
    # The browser marks these lines (code_panel.py); the browser test checks the marks.
    assert set(parts.ran) == set(current.focus.lines)
    assert parts.current == current.focus.last_line
    numbered = [int(e.attrs["data-line"]) for e in panel.with_attr("data-line")]
    assert numbered == list(range(current.focus.start_line, current.focus.end_line + 1))


def test_code_lines_are_the_engine_source_highlighted_by_pygments() -> None:
    timeline = reset("preempt")
    focus = timeline.steps[1].focus
    assert focus is not None
    source = timeline.source(focus.file).splitlines()
    panel = code_parts(timeline, 1).html
    for element in parse(panel).with_attr("data-line"):
        number = int(element.attrs["data-line"])
        code = next(c for c in element.children if c.tag == "code")
        assert code.text == source[number - 1]
    assert '<span class="k">def</span>' in panel  # Pygments' token classes


def test_keep_mode_shows_the_guard_as_a_diff_against_released_code() -> None:
    panel = code_parts(reset("keep"), 1).html
    root = parse(panel)
    assert root.find_all(data_testid="code-panel")[0].attrs["data-diff"] == "true"
    removed = [e.text for e in root.iter() if "del" in e.attrs.get("class", "").split()]
    added = [e.text for e in root.iter() if "add" in e.attrs.get("class", "").split()]
    assert any(
        "if num_used_blocks != 1:  # The null block is always marked as used" in t for t in removed
    )
    assert any("def reset_prefix_cache(self) -> bool:" in t for t in removed)
    assert any("and not allow_used_blocks" in t for t in added)
    assert any("allow_used_blocks: bool = False" in t for t in added)
    # removed lines are not engine lines: no line number, never "ran"
    for element in root.iter():
        if "del" in element.attrs.get("class", "").split():
            assert "data-line" not in element.attrs and "data-ran" not in element.attrs


@pytest.mark.parametrize("mode", ["default", "preempt"])
def test_other_modes_show_the_released_code_without_a_diff(mode: str) -> None:
    root = parse(code_parts(reset(mode), 1).html)
    panel = root.find_all(data_testid="code-panel")[0]
    assert panel.attrs["data-diff"] == "false"
    assert panel.attrs["data-qualname"] == "BlockPool.reset_prefix_cache"
    assert not [e for e in root.iter() if "del" in e.attrs.get("class", "").split()]
    lines = [e.text for e in root.iter() if "ln" in e.attrs.get("class", "").split()]
    assert any("def reset_prefix_cache(self) -> bool:" in t for t in lines)
    assert not any("allow_used_blocks" in t for t in lines)
    # the heading says whose code it is, and what is left out is said beside it
    assert "vLLM 0.33.0 (released)" in plain(code_parts(reset(mode), 1).frame)
    assert any("Not modelled here" in t for t in lines)


def test_keep_modes_heading_labels_both_sides() -> None:
    head = plain(code_parts(reset("keep"), 1).frame)
    assert "KeepModeBlockPool.reset_prefix_cache" in head
    assert "proposed (not in vLLM 0.33.0), shown against vLLM 0.33.0 (released)" in head
    assert "only in vLLM 0.33.0 (released)" in head
    assert "only in proposed (not in vLLM 0.33.0)" in head


def test_every_variant_names_real_engine_functions() -> None:
    """Both sides of every registered change exist: each runs in some scenario and mode
    (but vLLM 0.33.0's client: only keep mode's build resets over HTTP), and the
    version it is shown against is found in its file."""
    traced = {
        (t.file, t.qualname): timeline
        for name in timelines.names()
        for mode in timelines.scenario(name).modes
        for timeline in [timelines.timeline(name, mode)]
        for s in timeline.steps
        for t in s.code
        if variant_of(t) is not None
    }
    registered = {(ref.file, ref.qualname) for c in CHANGES for ref in (c.old, c.new)}
    assert registered - set(traced) == {
        ("engine/vllm/api_server.py", "EngineCoreClient.reset_prefix_cache")
    }
    for file, qualname in registered:
        start, end = function_range(reset("keep").source(file), qualname)
        assert 0 < start < end
    for trace_key, timeline in traced.items():
        variant = variant_of(FunctionTrace(*trace_key, 1, 1, (1,), 1))
        assert variant is not None
        if variant.other is not None:
            start, end = function_range(timeline.source(variant.other.file), variant.other.qualname)
            assert 0 < start < end


def test_pygments_lines_line_up_with_the_source() -> None:
    for file, text in reset("keep").sources:
        lines = highlighted_lines(text)
        for number, line in enumerate(text.splitlines(), start=1):
            assert plain(lines[number - 1]) == line, (file, number)


def test_a_function_highlighted_alone_is_highlighted_as_in_its_file() -> None:
    """The code panel highlights only the functions that ran: it must look the same."""
    ranges = {
        (t.file, t.start_line, t.end_line): timeline.source(t.file)
        for name in timelines.names()
        for mode in timelines.scenario(name).modes
        for timeline in [timelines.timeline(name, mode)]
        for s in timeline.steps
        for t in s.code
    }
    assert len(ranges) > 20
    for (file, start, end), text in ranges.items():
        whole = highlighted_lines(text)[start - 1 : end]
        assert highlighted_range(text, start, end) == whole, (file, start)


def test_code_view_picker_lists_the_traces_and_shows_the_picked_one() -> None:
    state = SimulatorState(scenario="reset", mode="preempt")
    view = CodeView(state=state)
    timeline, step = state.timeline, 1
    assert timeline is not None
    view.sender.publish()
    plans = view.sender.sent["code"]["plans"]
    assert set(plans) == {f"reset/{m}" for m in timelines.scenario("reset").modes}
    plan = plans["reset/preempt"]
    assert plan[0]["labels"] == [] and plan[0]["focus"] == -1  # step 0 ran nothing: no picker
    state.step = step
    labels, focus = plan[step]["labels"], plan[step]["focus"]
    assert len(labels) == len(timeline.steps[step].code)
    assert focus == timeline.steps[step].code.index(timeline.steps[step].focus)
    assert labels[focus].startswith("▶ ")
    picked = view.pick(0)["picked"]  # the browser's request, answered
    first = timeline.steps[step].code[0]
    assert (picked["key"], picked["step"], picked["index"]) == ("reset/preempt", step, 0)
    assert (
        parse(view.html).find_all(data_testid="code-panel")[0].attrs["data-qualname"]
        == first.qualname
    )
    state.step = 2  # a new step goes back to its focus
    assert parse(view.html).find_all(data_testid="code-panel")[0].attrs["data-qualname"] == (
        timeline.steps[2].focus.qualname  # type: ignore[union-attr]
    )
    # A stale or malformed pick changes nothing.
    for key, at, index in (("reset/preempt", 99, 0), ("reset/preempt", -1, 0), ("other/x", 1, 0)):
        reply = view.page.request({"ask": "code", "key": key, "step": at, "index": index, "id": 7})
        assert reply == {"id": 7}  # answered, with nothing to show
    assert view.page.request({"ask": "code", "id": 8}) == {"id": 8}  # malformed
    reply = view.page.request({"ask": "code", "key": "reset/keep", "step": 1, "index": 0})
    assert reply["picked"]["key"] == "reset/keep"  # a pick in another mode the browser holds
    assert len(function_options(timeline, 2)) == len(timeline.steps[2].code)


# -- state ------------------------------------------------------------------------------


def test_mode_change_rebuilds_and_restarts() -> None:
    state = SimulatorState(scenario="reset", mode="default")
    state.step = 5
    state.mode = "keep"
    assert state.step == 0
    assert state.timeline is reset("keep")
    assert state.current.snapshot == reset("keep").steps[0].snapshot


def test_scenario_with_one_mode_falls_back_to_it() -> None:
    state = SimulatorState(scenario="reset", mode="preempt")
    state.scenario = SINGLE_MODE
    only = timelines.scenario(SINGLE_MODE).modes[0]
    assert state.mode == only and state.timeline is timelines.timeline(SINGLE_MODE, only)


def test_open_jumps_to_a_deep_link_without_restarting() -> None:
    state = SimulatorState()
    state.open("reset", "keep", 5)
    assert (state.scenario, state.mode, state.step) == ("reset", "keep", 5)


# -- deep links ------------------------------------------------------------------------


def test_valid_link() -> None:
    link = parse_link("?scenario=reset&mode=keep&step=5&embed=1")
    assert (link.scenario, link.mode, link.step, link.embed, link.notices) == (
        "reset",
        "keep",
        5,
        True,
        (),
    )


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("?scenario=nope&mode=keep", "scenario"),
        ("?mode=turbo", "mode"),
        ("?step=abc", "step"),
        ("?step=-1", "step"),
        ("?step=999", "step"),
        ("?step=2.5", "step"),
        ("?step=", "step"),
    ],
)
def test_invalid_link_values_fall_back_with_a_notice(query: str, parameter: str) -> None:
    link = parse_link(query)
    default = parse_link("")
    assert len(link.notices) == 1 and f"Ignored {parameter}=" in link.notices[0]
    assert getattr(link, parameter) == getattr(default, parameter)


def test_mode_is_checked_against_the_scenario() -> None:
    link = parse_link(f"?scenario={SINGLE_MODE}&mode=preempt&step=1")
    assert link.mode == timelines.scenario(SINGLE_MODE).modes[0]
    assert link.step == 1 and "mode" in link.notices[0]


# -- controls, keyboard, player, app -----------------------------------------------------


def test_the_document_names_every_mode_and_where_to_open() -> None:
    app = App(link=parse_link("?scenario=reset&mode=preempt&step=3"))
    document = app.page.opened
    modes = timelines.scenario("reset").modes
    assert document["version"] == DOCUMENT_VERSION
    assert document["lasts"] == {f"reset/{m}": len(reset(m).steps) - 1 for m in modes}
    assert document["held"] == {f"reset/{m}": [0, len(reset(m).steps)] for m in modes}
    assert document["at"] == ["reset/preempt", 3] and document["keep"] is False
    assert document["queries"]["reset/keep"] == {"scenario": "reset", "mode": "keep"}
    # Python holds no position the browser writes: the page has no parameter for one.
    assert {"at", "received", "bundle"}.isdisjoint(app.page.param)


def test_nothing_goes_to_the_page_but_a_new_scenario() -> None:
    app = App(link=parse_link("?scenario=reset"))
    sent = watch_views(app)
    serial = app.page.opened["serial"]
    app.page.request({"ask": "pick", "name": "eviction-order"})  # a new document, at its start
    assert sent == ["document_json"]
    assert app.page.opened["at"] == ["eviction-order/default", 0]
    assert app.page.opened["serial"] == serial + 1
    reply = app.page.request({"ask": "pick", "name": "no-such-scenario"})
    assert "No scenario is named" in reply["error"] and sent == ["document_json"]


def test_mode_control_hidden_for_single_mode_scenarios() -> None:
    app = App(link=parse_link("?scenario=reset"))
    assert len(app.page.opened["lasts"]) > 1  # the picker shows them (mode_picker.js)
    app.page.request({"ask": "pick", "name": SINGLE_MODE})
    state = app.state
    assert app.page.opened["lasts"] == {state.key: state.last_step}  # it hides
    assert app.page.opened["at"] == [state.key, 0]


def test_every_shortcut_asks_for_a_move_of_the_player() -> None:
    player = (Path(__file__).parents[2] / "app" / "components" / "player.js").read_text()
    moves = re.search(r"const moves = \{(.*?)\n  \}", player, re.S)
    assert moves is not None
    assert set(KEY_MOVES.values()) == set(re.findall(r"^\s+(\w+):", moves.group(1), re.M))
    assert set(KEY_MOVES) == {"ArrowLeft", "ArrowRight", " ", "Home", "End"}


def test_the_embed_names_what_it_is_and_its_modes() -> None:
    # The write-up's figure, met cold: vLLM's prefix cache, the scenario in one line, and
    # what each of its modes does.
    for mode in ("default", "preempt", "keep"):
        html = render_embed_header(timelines.timeline("reset", mode), 0)
        assert "vLLM's prefix cache" in html and "Reset under load" in html
        assert "reset its prefix cache" in html
        said = html.split('data-testid="embed-modes">')[1].split("</span></p>")[0]
        assert [said.index(m) for m in ("default", "preempt", "keep")] == sorted(
            said.index(m) for m in ("default", "preempt", "keep")
        )
        assert "refused" in said and "proposed" in said
    # A scenario of one mode says nothing of modes.
    assert "embed-modes" not in render_embed_header(
        timelines.timeline("eviction-order", "default"), 0
    )


@pytest.mark.parametrize("embed", [False, True])
def test_app_builds_and_opens_the_link(embed: bool) -> None:
    query = "?scenario=reset&mode=keep&step=3&bogus=1&mode=x" + ("&embed=1" if embed else "")
    app = App(link=parse_link(query))
    assert (app.state.mode, app.state.step) == ("keep", 3)
    assert isinstance(app.__panel__(), pn.Column)
    assert not app.page.notice_html
    assert 'data-step="3"' in app.narration.html
    assert ("embed-title" in app.header.html) is embed
    # The static site's early page steps only at an address showing this state.
    opened = {"scenario": ["reset"], "mode": ["keep"], "step": ["3"]}
    assert parse_qs(app.query) == {**opened, **({"embed": ["1"]} if embed else {})}
    assert app.page.opened["at"] == ["reset/keep", 3]


@pytest.mark.parametrize("embed", [False, True])
def test_a_prebuilt_page_gets_the_head_then_the_whole_document_when_it_asks(embed: bool) -> None:
    """The static site's early page holds the builder's document of a built-in scenario:
    Python writes only its head, marked `prebuilt`, and the player keeps the builder's.
    Asked (a page without the early one), it writes the whole document, the builder's."""
    layout = "&embed=1" if embed else ""
    builders = App(link=parse_link("?scenario=reset" + layout)).page  # as the builder makes it
    query = "?scenario=reset&mode=keep&step=3" + layout
    app = App(link=parse_link(query), prebuilt=True)
    head = app.page.opened
    assert head["prebuilt"] is True and not {"views", "code", "bodies", "questions"} & set(head)
    built = builders.opened
    assert (head["serial"], head["scenario"]) == (built["serial"], built["scenario"])
    assert head["at"] == ["reset/keep", 3] and head["lasts"] == head["held"] == {}
    assert len(app.page.document_json) * 1000 < len(builders.document_json)
    # A pick in the hash chain is answered before any document is made.
    reply = app.chain.pick("B")
    assert reply["views"]["chain"]["orders"]["reset/keep"]
    app.page.receive({"ask": "open", "query": query, "id": 1})
    whole = app.page.opened
    assert whole["serial"] == 2 and "prebuilt" not in whole and whole["at"] == head["at"]
    for field in ("code", "bodies", "questions", "lasts", "scenario"):
        assert whole[field] == built[field], field
    assert whole["views"].keys() == built["views"].keys()
    assert whole["views"]["PoolView"] == built["views"]["PoolView"]
    # A playground's document is never the builder's.
    playground = App(link=parse_link(empty_playground_href()), prebuilt=True).page.opened
    assert "prebuilt" not in playground and playground["views"]


def test_going_back_reopens_the_address_of_the_entry() -> None:
    app = App(link=parse_link("?scenario=reset&mode=keep&step=3"))
    player = app.page
    player.receive({"ask": "open", "query": "?scenario=eviction-order&step=2&embed=1", "id": 1})
    assert (app.state.scenario, app.state.step) == ("eviction-order", 2)
    assert parse_qs(app.query)["step"] == ["2"]
    assert player.opened["at"] == ["eviction-order/default", 2]
    for junk in ("not a dict", {"query": "?scenario=reset"}, {"ask": "open", "query": 5}, {}):
        player.receive(junk)  # a malformed message changes nothing
    assert (app.state.scenario, app.state.step) == ("eviction-order", 2)
    player.receive({"ask": "open", "query": "?mode=turbo&step=x"})  # corrected, not broken
    assert (app.state.scenario, app.state.mode, app.state.step) == ("reset", "default", 0)
    # An address of the open scenario the player did not hold moves the player too.
    player.receive({"ask": "open", "query": "?scenario=reset&mode=keep&step=2"})
    assert player.opened["at"] == ["reset/keep", 2]
    assert player.request({"ask": "nonsense", "id": 3})["error"]  # said, not broken


def test_app_shows_a_notice_for_an_ignored_parameter() -> None:
    app = App(link=parse_link("?mode=turbo&step=x"))
    text = plain(app.page.notice_html)
    assert "mode='turbo'" in text and "step='x'" in text


# -- every scenario ----------------------------------------------------------------------


def every_timeline() -> list[tuple[str, str]]:
    return [(n, m) for n in timelines.names() for m in timelines.scenario(n).modes]


@pytest.mark.parametrize(("name", "mode"), every_timeline())
def test_every_scenario_renders_every_step(name: str, mode: str) -> None:
    """The whole app steps through each timeline; a logged callback error fails it."""
    app = App(link=parse_link(f"?scenario={name}&mode={mode}"))
    timeline = timelines.timeline(name, mode)
    key = timelines.timeline_key(timeline)
    assert app.page.opened["held"][key] == [0, len(timeline.steps)]  # the page holds them all
    for step in range(len(timeline.steps)):
        assert f'data-step="{step}"' in app.sender.page("NarrationView", key, step)
    # Views only for what the scenario has.
    # (an empty page hides its part in the browser: deck_slot.js)
    offload = app.sender.decks["OffloadView"]
    assert any(offload["pages"]) == (timeline.steps[0].snapshot.offload is not None)


def watch_views(app: App) -> list[str]:
    """What Python sends to the views' browser models from now on."""
    sent: list[str] = []

    def note(*events: param.parameterized.Event) -> None:
        sent.extend(event.name for event in events)

    app.page.param.watch(note, python_writes(app.page))  # every view's pages, the code's
    return sent


def python_writes(page: StepPage) -> list[str]:
    """Every parameter of the stepping page (Python's to write: the browser writes none)."""
    return [name for name in page.param if name != "name"]


def test_a_new_scenario_sends_every_page_of_every_mode_once() -> None:
    app = App(link=parse_link(f"?scenario={SINGLE_MODE}"))
    app.page.request({"ask": "pick", "name": "reset"})
    deck = app.sender.decks["PoolView"]
    modes = timelines.scenario("reset").modes
    assert set(deck["orders"]) == {f"reset/{m}" for m in modes}
    assert len(set(deck["pages"])) == len(deck["pages"])  # each distinct page sent once
    for mode in modes:
        timeline = timelines.timeline("reset", mode)
        assert [deck["pages"][i] for i in deck["orders"][f"reset/{mode}"]] == [
            render_pool(timeline, s) for s in range(len(timeline.steps))
        ]
    assert app.page.opened["at"] == ["reset/default", 0]
    # The document carries the deck as it is here.
    bundled = app.page.opened["views"]["PoolView"]
    assert bundled["pages"] == list(deck["pages"]) and set(bundled["orders"]) == set(deck["orders"])
    # Modes share what they show alike: fewer pages than steps in all.
    assert len(deck["pages"]) < sum(len(order) for order in deck["orders"].values())


# -- metrics and KV events ---------------------------------------------------------------


@pytest.mark.parametrize(("name", "mode"), every_timeline())
def test_metrics_and_events_are_the_snapshot(name: str, mode: str) -> None:
    timeline = timelines.timeline(name, mode)
    for step, current in enumerate(timeline.steps):
        root = parse(render_metrics(timeline, step))
        (metrics,) = root.find_all(data_testid="metrics")
        stats = current.snapshot.stats
        for field in ("requests", "queries", "hits", "resets"):
            assert metrics.attrs[f"data-{field}"] == str(getattr(stats, field))
        for field in ("requests", "queries", "hits"):
            assert metrics.attrs[f"data-preempted-{field}"] == str(
                getattr(stats, f"preempted_{field}")
            )
        rate = metrics.attrs["data-hit-rate"]
        assert (float(rate) if rate else None) == (
            pytest.approx(stats.hits / stats.queries, abs=1e-6) if stats.queries else None
        )
        survival = metrics.attrs["data-survival"]
        assert (float(survival) if survival else None) == (
            pytest.approx(stats.preempted_hits / stats.preempted_queries, abs=1e-6)
            if stats.preempted_queries
            else None
        )
        events = root.find_all(data_testid="events")[0].with_attr("data-type")
        assert [e.attrs["data-type"] for e in events] == [e.type for e in current.snapshot.events]
        # Every hash an event names is labelled as the pool labels it, this step or the last.
        pool_labels = {
            b.hash_label
            for s in timeline.steps[max(0, step - 1) : step + 1]
            for b in s.snapshot.blocks
            + (s.snapshot.offload.cpu_blocks if s.snapshot.offload else ())
            if b.hash_label
        }
        for element, event in zip(events, current.snapshot.events, strict=True):
            labels = element.attrs["data-hashes"].split()
            assert len(labels) == len(dict(event.fields).get("block_hashes") or [])
            assert set(labels) <= pool_labels


def test_stored_events_name_the_blocks_cached_at_that_step() -> None:
    timeline = timelines.timeline("shared-prefix", "default")
    for step, current in enumerate(timeline.steps):
        stored = [
            label
            for e in parse(render_metrics(timeline, step)).with_attr("data-type")
            if e.attrs["data-type"] == "BlockStored"
            for label in e.attrs["data-hashes"].split()
        ]
        before = (
            {e.hash_label for e in timeline.steps[step - 1].snapshot.hash_map} if step else set()
        )
        now = {e.hash_label for e in current.snapshot.hash_map}
        assert set(stored) == now - before


def test_survival_fraction_shows_after_a_preemption() -> None:
    timeline = timelines.timeline("preemption", "default")
    stats = timeline.steps[-1].snapshot.stats
    assert stats.preempted_queries > 0
    text = plain(render_metrics(timeline, len(timeline.steps) - 1))
    assert f"{stats.preempted_hits / stats.preempted_queries:.1%}" in text


# -- hash chain --------------------------------------------------------------------------


def chain_of(timeline: Timeline, step: int, a: str | None = None, b: str | None = None) -> Any:
    return parse(render_chain(timeline, step, a, b)).find_all(data_testid="hash-chain")[0]


def test_chain_shows_the_requests_hashes_and_marks_equal_ones() -> None:
    timeline = timelines.timeline("prepend-token", "default")
    last = len(timeline.steps) - 1
    snapshot = timeline.steps[last].snapshot
    ids = [r.request_id for r in snapshot.requests]
    for a in ids:
        for b in ids:
            if a == b:
                continue
            chain = chain_of(timeline, last, a, b)
            ra, rb = snapshot.request(a), snapshot.request(b)
            assert chain.attrs["data-hashes"].split() == list(ra.block_hash_labels)
            assert chain.attrs["data-other-hashes"].split() == list(rb.block_hash_labels)
            rows = chain.with_attr("data-same")
            assert [r.attrs["data-same"] == "true" for r in rows] == [
                x == y for x, y in zip(ra.block_hash_labels, rb.block_hash_labels, strict=True)
            ]
    # One token in front: no block hash in common with the original prompt.
    first, prepended = ids[0], ids[1]
    rows = chain_of(timeline, last, prepended, first).with_attr("data-same")
    assert rows and all(r.attrs["data-same"] == "false" for r in rows)


def test_chain_shows_the_cache_salt_as_an_extra_key() -> None:
    timeline = timelines.timeline("cache-salt", "default")
    last = len(timeline.steps) - 1
    snapshot = timeline.steps[last].snapshot
    salted = next(r for r in snapshot.requests if r.cache_salt)
    chain = chain_of(timeline, last, salted.request_id)
    first = chain.with_attr("data-index")[0]
    assert salted.chain[0].extra_keys and salted.chain[0].extra_keys in html.unescape(first.text)
    same_salt = [
        r for r in snapshot.requests if r.cache_salt == salted.cache_salt and r is not salted
    ]
    other_salt = [r for r in snapshot.requests if r.cache_salt != salted.cache_salt]
    for other, equal in [(r, True) for r in same_salt] + [(r, False) for r in other_salt]:
        rows = chain_of(timeline, last, salted.request_id, other.request_id).with_attr("data-same")
        assert (rows[0].attrs["data-same"] == "true") is equal


def test_long_chains_fold_their_middle() -> None:
    timeline = timelines.timeline("exact-duplicate", "default")
    last = len(timeline.steps) - 1
    request = timeline.steps[last].snapshot.requests[-1]
    chain = chain_of(timeline, last)
    assert len(request.chain) > COLLAPSE_FROM
    assert chain.attrs["data-blocks"] == str(len(request.chain))
    assert len(chain.with_attr("data-index")) == len(request.chain)  # all there, the middle folded
    (folded,) = [e for e in chain.iter() if e.tag == "details"]
    assert len(folded.with_attr("data-index")) == len(request.chain) - 2 * EDGE


def test_chain_view_follows_the_newest_request_until_the_learner_picks() -> None:
    state = SimulatorState(scenario="prepend-token")
    view = ChainView(state=state)
    for _ in range(state.last_step):
        state.step += 1
        newest, _ = default_pair(state.current.snapshot)
        if newest is not None:
            assert (
                parse(view.html).find_all(data_testid="hash-chain")[0].attrs["data-request"]
                == newest
            )
    ids = [r.request_id for r in state.current.snapshot.requests]
    view.pick(ids[0], ids[-1])
    state.step -= 1
    chain = parse(view.html).find_all(data_testid="hash-chain")[0]
    assert chain.attrs["data-request"] == ids[0]
    view.pick(ids[0], "")  # "(none)"
    assert parse(view.html).find_all(data_testid="hash-chain")[0].attrs["data-other"] == ""


def test_chain_pickers_show_the_pair_each_step_shows() -> None:
    """The pickers are in each step's page: their choices are the step's requests, on the
    pair the chain shows, so a step in the browser needs no word from Python."""
    state = SimulatorState(scenario="prepend-token")
    view = ChainView(state=state)
    for step in range(state.last_step + 1):
        state.step = step
        page = parse(view.html)
        ids = [r.request_id for r in state.current.snapshot.requests]
        selects = {e.attrs["data-pick"]: e for e in page.iter() if e.tag == "select"}
        if not ids:
            assert selects == {}
            continue
        chain = page.find_all(data_testid="hash-chain")[0]
        options = [o.attrs["value"] for o in selects["primary"].iter() if o.tag == "option"]
        assert options == ids
        chosen = {
            name: [
                o.attrs["value"] for o in e.iter() if o.tag == "option" and "selected" in o.attrs
            ]
            for name, e in selects.items()
        }
        assert chosen == {
            "primary": [chain.attrs["data-request"]],
            "other": [chain.attrs["data-other"]],
        }


def test_chain_view_keeps_each_timelines_picks_to_itself() -> None:
    """The picks name the requests of the timeline they were made on: another mode shows
    its newest pair, and the picked one its picks again."""
    state = SimulatorState(scenario="reset", mode="default")
    view = ChainView(state=state)
    state.step = 3

    def shown() -> tuple[str, str]:
        chain = parse(view.html).find_all(data_testid="hash-chain")[0]
        return chain.attrs["data-request"], chain.attrs["data-other"]

    assert shown() == ("B", "A")
    reply = view.pick("A", "")  # "(none)"
    assert shown() == ("A", "")
    assert tuple(reply["views"]["chain"]["pages"]) == view.sender.decks["chain"]["pages"]
    state.mode = "keep"
    assert shown() == ("B", "A")
    state.mode = "default"
    assert shown() == ("A", "")
    reply = view.page.request({"ask": "chain", "key": "another/default", "primary": "B"})
    assert shown() == ("A", "") and "views" not in reply  # a scenario left: nothing changes


# -- prefill cost ------------------------------------------------------------------------


def test_prefill_seed_example_gives_the_seed_figures() -> None:
    """The seed's worked example is the spec: 36.60 vs 3.43 TFLOP, 10.7x, 90.6 %, 74.5 ms."""
    inputs = parse_inputs(seed_texts())
    assert not isinstance(inputs, list)
    text = plain(render_prefill(inputs, ""))
    for figure in ("36.60 TFLOP", "3.43 TFLOP", "10.7\N{MULTIPLICATION SIGN}", "90.6 %", "74.5 ms"):
        assert figure in text, figure


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("cached_tokens", "2200", "shorter than the prompt"),
        ("cached_tokens", "3000", "shorter than the prompt"),
        ("cached_tokens", "-1", "at least 0"),
        ("prompt_tokens", "-5", "must be positive"),
        ("num_layers", "abc", "must be a number"),
        ("flops_per_second", "", "is empty"),
        ("flops_per_second", "0", "must be positive"),
        ("head_dim", "12.5", "whole number"),
        ("num_parameters", "nan", "finite"),
    ],
)
def test_prefill_bad_inputs_give_a_message(field: str, text: str, message: str) -> None:
    result = parse_inputs({**seed_texts(), field: text})
    assert isinstance(result, list) and any(message in m for m in result), result
    root = parse(render_prefill(result, ""))
    (panel,) = root.find_all(data_testid="prefill-cost")
    assert panel.attrs["data-valid"] == "false" and message in html.unescape(panel.text)


def shown_fields(html_text: str) -> dict[str, str]:
    """The fields the calculator's page shows (the browser fills its fields from them)."""
    (page,) = parse(html_text).with_attr("data-fields")
    fields: dict[str, str] = json.loads(page.attrs["data-fields"])
    return fields


def test_prefill_view_follows_the_step_then_the_learner() -> None:
    state = SimulatorState(scenario="exact-duplicate")
    view = PrefillView(state=state)
    state.step = state.last_step
    request = step_request(state.current.snapshot)
    assert request is not None and request.num_cached_tokens > 0
    cost = prefill_cost(request.num_prompt_tokens, request.num_cached_tokens, SEED_FLOPS)
    panel = parse(view.html).find_all(data_testid="prefill-cost")[0]
    assert float(panel.attrs["data-speedup"]) == pytest.approx(cost.speedup, rel=1e-4)
    typed = {**shown_fields(view.html), "cached_tokens": "abc"}
    view.act("own", typed)  # typing stops following, shows the message
    assert parse(view.html).find_all(data_testid="prefill-cost")[0].attrs["data-valid"] == "false"
    state.step = 0
    assert shown_fields(view.html)["cached_tokens"] == "abc"  # the learner's, at every step
    view.act("example", seed_texts())
    panel = parse(view.html).find_all(data_testid="prefill-cost")[0]
    assert float(panel.attrs["data-seconds-saved"]) == pytest.approx(0.0745, abs=5e-5)
    assert "agent-prompt example" in view.html
    state.step = state.last_step
    view.act("step", {**seed_texts(), "num_layers": "40"})
    assert shown_fields(view.html)["cached_tokens"] == str(request.num_cached_tokens)
    assert shown_fields(view.html)["num_layers"] == "40"  # the learner's model stays
    view.act("nonsense", {})  # not an act: nothing changes
    assert shown_fields(view.html)["num_layers"] == "40"


def test_prefill_view_steps_in_the_browser_while_it_follows() -> None:
    app = App(link=parse_link("?scenario=cache-salt"))
    sent = watch_views(app)
    timeline = app.state.timeline
    assert timeline is not None
    for step in range(len(timeline.steps)):
        page = app.sender.page("prefill", app.state.key, step)  # in the page's document
        request = step_request(timeline.steps[step].snapshot)
        panel = parse(page).find_all(data_testid="prefill-cost")[0]
        if request is None:
            assert "agent-prompt example" in page
        else:
            expected = prefill_cost(
                request.num_prompt_tokens, request.num_cached_tokens, SEED_FLOPS
            )
            assert float(panel.attrs["data-speedup"]) == pytest.approx(expected.speedup, rel=1e-4)
            assert shown_fields(page)["prompt_tokens"] == str(request.num_prompt_tokens)
    assert sent == []
    reply = app.prefill.act("own", {**model_texts(), "num_layers": "64"})  # one page, every step
    assert set(reply["views"]["prefill"]["pages"]) == {app.prefill.html, ""}
    # One page at every step of vLLM's timelines; SGLang's have none (the view hides there).
    assert set(app.sender.decks["prefill"]["pages"]) == {app.prefill.html, ""}
    assert "Your inputs" in app.prefill.html


# -- crash sites and the API layer --------------------------------------------------------


def crash_step(name: str) -> int:
    steps = timelines.timeline(name, "keep").steps
    return next(i for i, s in enumerate(steps) if s.snapshot.engine_dead)


@pytest.mark.parametrize("name", ["keep-offload-crash", "keep-aux-crash"])
def test_a_dead_engine_core_is_unmistakable(name: str) -> None:
    timeline = timelines.timeline(name, "keep")
    dead = crash_step(name)
    for step, current in enumerate(timeline.steps):
        root = parse(render_narration(timeline, step))
        banner = root.find_all(data_testid="engine-dead")
        assert bool(banner) == current.snapshot.engine_dead == (step >= dead)
    crash = parse(render_narration(timeline, dead))
    assert timeline.steps[dead].result in html.unescape(crash.text)
    assert any("error" in e.attrs.get("class", "").split() for e in crash.iter())


def test_aux_output_generations_are_shown() -> None:
    timeline = timelines.timeline("keep-aux-crash", "keep")
    for step, current in enumerate(timeline.steps):
        aux = current.snapshot.aux_output
        assert aux is not None
        (line,) = parse(render_narration(timeline, step)).find_all(data_testid="aux-output")
        assert line.attrs["data-scheduler-generation"] == str(aux.scheduler_generation)
        assert line.attrs["data-worker-generation"] == str(aux.worker_generation)
        assert line.attrs["data-in-flight"] == str(aux.outputs_in_flight)
    assert not parse(render_narration(reset("keep"), 1)).find_all(data_testid="aux-output")


def test_offload_view_is_the_cpu_side_of_the_snapshot() -> None:
    timeline = timelines.timeline("keep-offload-fixed", "keep")
    assert render_offload(reset("keep"), 0) == ""
    for step, current in enumerate(timeline.steps):
        offload = current.snapshot.offload
        assert offload is not None
        root = parse(render_offload(timeline, step))
        cells = root.with_attr("data-ref-cnt")
        assert [
            (c.attrs["data-testid"], c.attrs["data-ref-cnt"], c.attrs["data-state"]) for c in cells
        ] == [(f"cpu-block-{b.block_id}", str(b.ref_cnt), b.state) for b in offload.cpu_blocks]
        stores = root.find_all(data_testid="stores")[0].with_attr("data-store-event")
        assert [int(s.attrs["data-store-event"]) for s in stores] == [
            s.store_event for s in offload.stores_in_flight
        ]
        hashes = root.find_all(data_testid="cpu-hash-map")[0].with_attr("data-hash")
        assert [h.attrs["data-hash"] for h in hashes] == [
            e.hash_label for e in offload.cpu_hash_map
        ]


def test_crash_site_code_is_a_diff_against_the_fix() -> None:
    timeline = timelines.timeline("keep-offload-crash", "keep")
    dead = crash_step("keep-offload-crash")
    parts = code_parts(timeline, dead)
    root = parse(parts.html)
    (panel,) = root.find_all(data_testid="code-panel")
    assert panel.attrs["data-qualname"] == timeline.steps[dead].focus.qualname  # type: ignore[union-attr]
    assert panel.attrs["data-diff"] == "true"
    lines = [e for e in root.iter() if e.attrs.get("class", "").startswith("ln")]
    # The assertion that failed is the traced code's, and the fix does not have it.
    failed = next(e for e in lines if e.attrs.get("data-line") == str(parts.current))
    assert "assert primary_hash is not None" in html.unescape(failed.text)
    assert "del" in failed.attrs["class"].split()
    added = [html.unescape(e.text) for e in lines if "add" in e.attrs["class"].split()]
    assert any("if primary_hash is None:" in t for t in added)


@pytest.mark.parametrize("name", ["api-layer", "keep-offload-crash", "keep-aux-crash"])
def test_error_results_are_marked(name: str) -> None:
    timeline = timelines.timeline(name, "keep")
    for step, current in enumerate(timeline.steps):
        if not current.result:
            continue
        failed = current.result.startswith(("HTTP 4", "HTTP 5")) or "Error" in current.result
        root = parse(render_narration(timeline, step))
        classes = {c for e in root.iter() for c in e.attrs.get("class", "").split()}
        assert bool(classes & {"error", "warn"}) == failed, current.result


# -- scenario picker ---------------------------------------------------------------------


def test_scenario_picker_and_list_show_titles_and_summaries() -> None:
    options = scenario_options()
    assert [name for name, _ in options] == timelines.names()
    assert [title for _, title in options] == [
        timelines.scenario(n).title for n in timelines.names()
    ]
    header = parse(HeaderView(state=SimulatorState(scenario="cache-salt")).html)
    items = header.find_all(data_testid="scenario-list")[0].with_attr("data-scenario")
    assert [i.attrs["data-scenario"] for i in items] == timelines.names()
    for item in items:
        scenario = timelines.scenario(item.attrs["data-scenario"])
        text = " ".join(html.unescape(item.text).split())
        assert scenario.title in text and " ".join(scenario.summary.split()) in text


def test_code_panel_holds_each_steps_focus_and_a_pick_until_the_next_step() -> None:
    app = App(link=parse_link("?scenario=reset&mode=keep"))
    code, bodies = app.sender.sent["code"], app.sender.sent["bodies"]
    for mode in timelines.scenario("reset").modes:  # every mode is in the browser
        timeline = timelines.timeline("reset", mode)
        for step in range(len(timeline.steps)):
            at = code["plans"][f"reset/{mode}"][step]
            parts = code_parts(timeline, step)
            assert (
                code["frames"][at["frame"]],
                bodies[at["body"]],
                tuple(at["ran"]),
                at["current"],
            ) == (
                parts.frame,
                parts.body,
                parts.ran,
                parts.current,
            )
    timeline = app.state.timeline
    assert timeline is not None
    plan = code["plans"]["reset/keep"]
    focus = plan[1]["focus"]
    other = next(i for i in range(len(plan[1]["labels"])) if i != focus)
    asked = {"ask": "code", "key": "reset/keep", "step": 1, "index": other}
    picked = app.page.request(asked)["picked"]  # the page asks for a function at step 1
    parts = code_parts(timeline, 1, other)
    assert (picked["frame"], picked["body"], picked["current"]) == (
        parts.frame,
        parts.body,
        parts.current,
    )


def test_the_chain_does_not_claim_equal_hashes_prove_equal_tokens() -> None:
    """Equal tokens give equal hashes; the converse is trusted by vLLM, never checked."""
    timeline = timelines.timeline("shared-prefix", "default")
    last = len(timeline.steps) - 1
    text = plain(render_chain(timeline, last, *default_pair(timeline.steps[last].snapshot)))
    assert "Equal hashes mean equal tokens" not in text
    assert "never compares the tokens" in text
    assert "collided" in text


def test_a_code_plan_reaches_the_browser_with_every_field_by_name() -> None:
    """code_panel.js reads a step's plan by field name: every field of Plan, as it is."""
    plan = CodePlan.of({timelines.timeline_key(t): t for t in timelines.of_scenario("reset")})
    for per_step in plan.plans.values():
        for step_plan in per_step:
            sent = step_plan.as_dict()
            fields = {f.name: getattr(step_plan, f.name) for f in dataclasses.fields(Plan)}
            assert sent == {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}
