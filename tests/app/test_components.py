"""Panel-level tests of the app, no browser: every view against the engine's timeline."""

from __future__ import annotations

import html
import re
from typing import Any

import panel as pn
import pytest

from app import timelines
from app.code_render import RELEASED_VARIANTS, highlighted_lines
from app.keyboard import KEY_BUTTONS
from app.layout import App
from app.player import Player
from app.state import SimulatorState
from app.url import parse_link
from app.views.code import CodeView, function_options, render_code
from app.views.controls import Controls
from app.views.hashmap import render_hash_map
from app.views.log import render_log
from app.views.narration import render_narration
from app.views.pool import changed_blocks, render_pool
from app.views.queue import render_queue
from app.views.requests import render_requests
from engine.timeline import Timeline
from tests.app.conftest import parse

MODES = timelines.scenario("reset").modes
SINGLE_MODE = next(n for n in timelines.names() if len(timelines.scenario(n).modes) == 1)


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
    panel = parse(render_code(timeline, step))
    if current.focus is None:
        assert not panel.with_attr("data-line")
        return
    ran = {int(e.attrs["data-line"]) for e in panel.with_attr("data-ran")}
    assert ran == set(current.focus.lines)
    (marked,) = panel.with_attr("data-current")
    assert int(marked.attrs["data-line"]) == current.focus.last_line
    numbered = [int(e.attrs["data-line"]) for e in panel.with_attr("data-line")]
    assert numbered == list(range(current.focus.start_line, current.focus.end_line + 1))


def test_code_lines_are_the_engine_source_highlighted_by_pygments() -> None:
    timeline = reset("preempt")
    focus = timeline.steps[1].focus
    assert focus is not None
    source = timeline.source(focus.file).splitlines()
    panel = render_code(timeline, 1)
    for element in parse(panel).with_attr("data-line"):
        number = int(element.attrs["data-line"])
        code = next(c for c in element.children if c.tag == "code")
        assert code.text == source[number - 1]
    assert '<span class="k">def</span>' in panel  # Pygments' token classes


def test_keep_mode_shows_the_guard_as_a_diff_against_released_code() -> None:
    panel = render_code(reset("keep"), 1)
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
def test_other_modes_show_the_code_without_a_diff(mode: str) -> None:
    root = parse(render_code(reset(mode), 1))
    assert root.find_all(data_testid="code-panel")[0].attrs["data-diff"] == "false"
    assert not [e for e in root.iter() if "del" in e.attrs.get("class", "").split()]


def test_every_released_variant_names_a_real_engine_function() -> None:
    timeline = reset("keep")
    for (file, qualname), _ in RELEASED_VARIANTS.items():
        assert any(
            t.file == file and t.qualname == qualname for s in timeline.steps for t in s.code
        )
        assert file in dict(timeline.sources)


def test_pygments_lines_line_up_with_the_source() -> None:
    for file, text in reset("keep").sources:
        lines = highlighted_lines(text)
        for number, line in enumerate(text.splitlines(), start=1):
            assert plain(lines[number - 1]) == line, (file, number)


def test_code_view_picker_lists_the_traces_and_shows_the_picked_one() -> None:
    state = SimulatorState(scenario="reset", mode="preempt")
    view = CodeView(state=state)
    assert not view._picker.visible  # step 0 ran nothing
    state.step = 1
    timeline, step = state.timeline, 1
    assert timeline is not None
    assert list(view._picker.options.values()) == list(range(len(timeline.steps[1].code)))
    assert view._picker.value == timeline.steps[1].code.index(timeline.steps[1].focus)
    view._picker.value = 0
    first = timeline.steps[step].code[0]
    assert (
        parse(view.html).find_all(data_testid="code-panel")[0].attrs["data-qualname"]
        == first.qualname
    )
    state.step = 2  # a new step goes back to its focus
    assert parse(view.html).find_all(data_testid="code-panel")[0].attrs["data-qualname"] == (
        timeline.steps[2].focus.qualname  # type: ignore[union-attr]
    )
    assert len(function_options(timeline, 2)) == len(timeline.steps[2].code)


# -- state ------------------------------------------------------------------------------


def test_state_steps_within_bounds() -> None:
    state = SimulatorState(scenario="reset", mode="default")
    state.step_back()
    assert state.step == 0
    for _ in range(50):
        state.step_forward()
    assert state.step == state.last_step == len(reset("default").steps) - 1
    state.step_back()
    assert state.step == state.last_step - 1
    state.restart()
    assert state.step == 0


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


def test_play_stops_at_the_end_and_replays_from_the_start() -> None:
    state = SimulatorState(scenario="reset", mode="default")
    state.toggle_play()
    assert state.playing
    while state.playing:
        state.step_forward()
    assert state.step == state.last_step
    state.toggle_play()
    assert state.playing and state.step == 0


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


def counter_text(controls: Controls) -> str:
    return plain(str(controls.counter.object))


def test_controls_drive_the_state() -> None:
    state = SimulatorState(scenario="reset", mode="default")
    controls = Controls(state=state)
    last = state.last_step
    assert counter_text(controls) == f"Step 0 / {last}"
    assert controls.back.disabled and not controls.forward.disabled
    controls.forward.clicks += 1
    controls.forward.clicks += 1
    assert state.step == 2 and counter_text(controls) == f"Step 2 / {last}"
    controls.back.clicks += 1
    assert state.step == 1
    controls.slider.value = 7
    assert state.step == 7
    controls.play.clicks += 1
    assert state.playing and controls.play.label == "Pause"
    controls.play.clicks += 1
    assert not state.playing and controls.play.label == "Play"
    controls.restart.clicks += 1
    assert state.step == 0 and controls.slider.value == 0
    controls.mode.value = "keep"
    assert state.mode == "keep" and state.step == 0


def test_mode_control_hidden_for_single_mode_scenarios() -> None:
    state = SimulatorState(scenario="reset", mode="default")
    controls = Controls(state=state)
    assert controls._modes_row.visible
    state.scenario = SINGLE_MODE
    assert not controls._modes_row.visible
    assert controls.slider.end == state.last_step


def test_every_shortcut_presses_a_real_button() -> None:
    controls = Controls(state=SimulatorState(scenario="reset", mode="default"))
    labels = {controls.restart.label, controls.back.label, controls.forward.label, "Play", "Pause"}
    for names in KEY_BUTTONS.values():
        assert set(names) <= labels
    assert set(KEY_BUTTONS) == {"ArrowLeft", "ArrowRight", " ", "Home"}


class FakeCallback:
    def __init__(self, callback: Any, period: int) -> None:
        self.callback, self.period, self.running = callback, period, True

    def stop(self) -> None:
        self.running = False


def test_player_ticks_while_playing() -> None:
    made: list[FakeCallback] = []

    def schedule(callback: Any, period: int, start: bool = True) -> FakeCallback:
        made.append(FakeCallback(callback, period))
        return made[-1]

    state = SimulatorState(scenario="reset", mode="default", speed=2.0)
    Player(state=state, schedule=schedule)
    state.toggle_play()
    (callback,) = made
    assert callback.period == 500
    state.speed = 4.0
    assert callback.period == 250
    while callback.running:
        callback.callback()
    assert state.step == state.last_step and not state.playing


@pytest.mark.parametrize("embed", [False, True])
def test_app_builds_and_opens_the_link(embed: bool) -> None:
    query = "?scenario=reset&mode=keep&step=3&bogus=1&mode=x" + ("&embed=1" if embed else "")
    app = App(link=parse_link(query))
    assert (app.state.mode, app.state.step) == ("keep", 3)
    assert isinstance(app.__panel__(), pn.Column)
    assert not app.notice.visible
    assert 'data-step="3"' in app.pool.html
    assert ("embed-title" in app.header.html) is embed


def test_app_shows_a_notice_for_an_ignored_parameter() -> None:
    app = App(link=parse_link("?mode=turbo&step=x"))
    assert app.notice.visible
    text = plain(str(app.notice.object))
    assert "mode='turbo'" in text and "step='x'" in text
