"""The playground in a real browser on `panel serve`: built by hand, checked against the engine.

Each check reads the page (pool, queue, map, requests, log, code, metrics, events,
chain) and compares it with build_timeline of the scenario the learner typed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from app.data.bundle import sends_every_step
from app.playground.store import EMPTY
from app.render.pool import render_hash_map, render_pool
from app.render.queue import render_queue
from app.views.editor import fork
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import build_timeline
from tests.app import test_browser_serve as serve
from tests.app.conftest import parse
from tests.app.page_checks import expected, read_page, wait_for_step
from tests.app.playground_checks import (
    SCRIPT,
    build_by_hand,
    check_an_edit_right_after_a_move_opens_there,
    check_import_refused,
    check_playground_step,
    check_the_editor_beside_the_views,
    export_toml,
    field,
    open_fork,
    start_empty,
    typed,
    walk,
)
from tests.app.test_browser_serve import Watched, open_app

# The same fixtures as the other `panel serve` tests (a server for this module).
server, playwright, browser, watched = serve.server, serve.playwright, serve.browser, serve.watched

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.browser


def test_a_scenario_built_by_hand_matches_the_engine_and_survives_reload_and_files(
    watched: Watched, server: str, tmp_path: Path
) -> None:
    page = open_app(watched, server, "?scenario=reset&mode=keep&step=2")
    open_fork(page)
    forked = build_timeline(scenario_from_dict(fork("reset")), "keep")
    check_playground_step(page, forked, 2)  # forked at the step the learner was on
    check_the_editor_beside_the_views(page)

    data, timeline = build_by_hand(page)
    walk(page, timeline)
    assert timeline.steps[4].snapshot.stats.hits == 8  # the shared beginning hit
    preempt = build_timeline(scenario_from_dict(data), "preempt")
    page.get_by_role("radio", name="preempt").check()  # a mode whose pages are built now
    # A mode switch keeps the step (within the mode's last), as everywhere.
    check_playground_step(page, preempt, min(len(timeline.steps), len(preempt.steps)) - 1)
    page.get_by_role("button", name="Restart").click()
    check_playground_step(page, preempt, 0)
    page.get_by_role("button", name="Step forward").click()
    check_playground_step(page, preempt, 1)
    page.get_by_role("radio", name="keep").check()
    walk(page, timeline)

    page.wait_for_url(re.compile(f"step={len(timeline.steps) - 1}"))  # written after a moment
    page.reload()
    check_playground_step(page, timeline, len(timeline.steps) - 1)
    expect(field(page, "Script (one action per line)")).to_have_value(SCRIPT)

    exported = export_toml(page, tmp_path, data)

    field(page, "Script (one action per line)").fill("add_request Z prompt: 1..4\nstep")
    wait_for_step(
        page,
        build_timeline(
            scenario_from_dict(typed(20, 4, "add_request Z prompt: 1..4\nstep")), "keep"
        ),
        2,
    )
    page.locator('input[type="file"]').set_input_files(str(exported))
    check_playground_step(page, timeline, 2)
    expect(field(page, "Script (one action per line)")).to_have_value(SCRIPT)


@pytest.mark.parametrize(
    ("label", "text", "message"),
    [
        ("GPU blocks", "1", "num_gpu_blocks must be from 2 to 10,000, not 1"),
        ("Block size", "0", "block_size must be from 1 to 64, not 0"),
        ("Script (one action per line)", "add_request A prompt: 1..x", "'1..x' is not a range"),
        ("Script (one action per line)", "add_request A prompt: 1..999", "needs 250 blocks"),
        ("Script (one action per line)", "dance", "line 1: unknown action 'dance'"),
        ("Script (one action per line)", "step\n" * 501, "501 actions is more than 500"),
        ("Script (one action per line)", "step 1000\nstep 1001", "2,001 engine steps is more"),
    ],
    ids=["pool", "block size", "range", "too big", "action", "500 actions", "2,000 steps"],
)
def test_bad_input_gets_its_message_and_the_page_keeps_working(
    watched: Watched, server: str, label: str, text: str, message: str
) -> None:
    page = open_app(watched, server, "?scenario=shared-prefix")
    open_fork(page)
    timeline = build_timeline(scenario_from_dict(fork("shared-prefix")), "default")
    check_playground_step(page, timeline, 0)
    field(page, label).fill(text)
    expect(page.locator(".pg-message", has_text=message)).to_be_visible()
    page.get_by_role("button", name="Step forward").click()
    check_playground_step(page, timeline, 1)  # the last valid timeline stays


def test_a_file_that_is_not_a_scenario_gets_its_message(watched: Watched, server: str) -> None:
    page = open_app(watched, server, "?scenario=shared-prefix")
    open_fork(page)
    timeline = build_timeline(scenario_from_dict(fork("shared-prefix")), "default")
    check_import_refused(page, timeline)


def test_user_text_in_a_message_is_escaped(watched: Watched, server: str) -> None:
    page = open_app(watched, server, "?scenario=shared-prefix")
    open_fork(page)
    line = 'add_request "<img src=x onerror=alert(1)>" prompt: 1\n'
    field(page, "Script (one action per line)").fill(line * 2)
    expect(page.locator(".pg-message", has_text="<img src=x")).to_contain_text("used twice")
    expect(page.locator(".pg-message img")).to_have_count(0)


def test_a_damaged_playground_address_gets_a_notice(watched: Watched, server: str) -> None:
    page = open_app(watched, server, "?scenario=playground&playground=p1.eNoLy8xJ")
    expect(page.get_by_test_id("notice")).to_contain_text("Ignored playground")


# Runs in the page: an action, then a mode picked at once, in one task, so the pick leaves
# the page before Python has answered the action: it names the scenario still on screen.
PICK_DURING = """
([target, radio, text]) => {
  if (text === null) { target.click() } else {
    target.value = text
    target.dispatchEvent(new Event('input', { bubbles: true }))
  }
  radio.click()
}
"""


@pytest.mark.parametrize("opening", ["fork", "edit"])
def test_a_mode_picked_while_a_playground_opens_is_applied_to_it(
    watched: Watched, server: str, opening: str
) -> None:
    page = open_app(watched, server, "?scenario=reset")
    script = "add_request A max_tokens=4 prompt: 1..8\nstep\nreset_prefix_cache\nstep 2"
    if opening == "fork":
        target, text = page.get_by_role("button", name="Edit a copy"), None
        data = fork("reset")
    else:
        open_fork(page)
        start_empty(page)
        check_playground_step(page, build_timeline(scenario_from_dict(EMPTY), "default"), 0)
        target, text = field(page, "Script (one action per line)"), script
        data = typed(10, 4, script)
    radio = page.get_by_role("radio", name="keep")
    page.evaluate(PICK_DURING, [target.element_handle(), radio.element_handle(), text])
    check_playground_step(page, build_timeline(scenario_from_dict(data), "keep"), 0)
    expect(radio).to_be_checked()


def test_an_edit_right_after_a_step_opens_at_that_step(watched: Watched, server: str) -> None:
    page = open_app(watched, server, "?scenario=shared-prefix")
    open_fork(page)
    check_an_edit_right_after_a_move_opens_there(page)


def test_an_edit_puts_the_function_picker_back_on_the_focus(watched: Watched, server: str) -> None:
    """The function picked was of the timeline before an edit: after the edit (a new
    timeline, whose step runs the same functions) the picker and the code are the step's
    focus again."""
    script = "add_request A max_tokens=4 prompt: 1..8\nstep\nreset_prefix_cache preempt\nstep"
    timeline = build_timeline(scenario_from_dict(typed(10, 4, script)), "default")
    at = next(i for i, step in enumerate(timeline.steps) if len(step.code) > 1)
    step = timeline.steps[at]
    assert step.focus is not None
    other = next(i for i, trace in enumerate(step.code) if trace != step.focus)
    page = open_app(watched, server, "?scenario=reset")
    open_fork(page)
    start_empty(page)
    field(page, "Script (one action per line)").fill(script)
    expect(page.get_by_test_id("step-counter")).to_contain_text(f"/ {len(timeline.steps) - 1}")
    page.get_by_role("slider", name="Step").fill(str(at))
    check_playground_step(page, timeline, at)
    picker = page.get_by_label("Functions that ran at this step (in the order entered)")
    panel = page.get_by_test_id("code-panel")
    picker.select_option(str(other))
    expect(panel).to_have_attribute("data-qualname", step.code[other].qualname)
    longer = script + "\nstep"
    field(page, "Script (one action per line)").fill(longer)
    edited = build_timeline(scenario_from_dict(typed(10, 4, longer)), "default")
    expect(page.get_by_test_id("step-counter")).to_contain_text(f"/ {len(edited.steps) - 1}")
    assert [t.qualname for t in edited.steps[at].code] == [t.qualname for t in step.code]
    expect(picker).to_have_value(str(step.code.index(step.focus)))
    expect(panel).to_have_attribute("data-qualname", step.focus.qualname)


def large_script(requests: int) -> str:
    """Requests sharing a 64-token prefix, ten at a time between engine steps."""
    lines = []
    for i in range(requests):
        first = 1_000 + 40 * i
        lines.append(f"add_request R{i} max_tokens=4 prompt: 1..64, {first}..{first + 39}")
        if i % 10 == 9:
            lines.append("step 2")
    return "\n".join([*lines, "run_until_idle"])


# What identifies an item of a long list (the pool's runs, the queue, the map).
LIST_KEYS = ("blockId", "first", "last", "gap", "hash", "state", "refCnt", "changed")


def shown_list(page: Any, selector: str) -> list[list[str]]:
    """A long pool's, queue's or map's items as the page shows them: ids, runs and gaps."""
    return page.locator(selector).evaluate_all(
        "(els, keys) => els.map(e => keys.map(k => e.dataset[k] || ''))", list(LIST_KEYS)
    )


def rendered_list(html: str, which: str) -> list[list[str]]:
    root = parse(html)
    items = (
        root.find_all(data_testid=which)[0].children
        if which in ("free-queue", "pool")
        else [
            r for r in root.iter() if r.tag == "tr" and ({"data-gap", "data-hash"} & set(r.attrs))
        ]
    )
    if which == "pool":
        items = next(e for e in items if e.tag == "ol").children
    keys = ["data-" + "".join("-" + c.lower() if c.isupper() else c for c in k) for k in LIST_KEYS]
    return [[li.attrs.get(k, "") for k in keys] for li in items]


def test_a_2000_block_playground_opens_and_steps(watched: Watched, server: str) -> None:
    page = open_app(watched, server, "?scenario=reset")
    page.get_by_role("button", name="Edit a copy").click()
    start_empty(page)
    field(page, "GPU blocks").fill("2000")
    field(page, "Block size").fill("16")
    script = large_script(30)
    field(page, "Script (one action per line)").fill(script)
    timeline = build_timeline(scenario_from_dict(typed(2000, 16, script)), "default")
    assert not sends_every_step(timeline)  # its decks hold a few steps at a time

    def check(step: int) -> None:
        wait_for_step(page, timeline, step)
        shown = read_page(page)
        want = expected(timeline, step)
        for part in ("requests", "log", "metrics", "ran"):
            assert shown[part] == want[part], part
        # The pool as runs (test_large_pool.py checks them against every block).
        pool = '[data-testid="pool"] .pool > li'
        assert shown_list(page, pool) == rendered_list(render_pool(timeline, step), "pool")
        queue = '[data-testid="free-queue"] > li'
        assert shown_list(page, queue) == rendered_list(render_queue(timeline, step), "free-queue")
        rows = '[data-testid="hash-map"] tr[data-hash], [data-testid="hash-map"] tr[data-gap]'
        assert shown_list(page, rows) == rendered_list(render_hash_map(timeline, step), "map")

    last = len(timeline.steps) - 1
    expect(page.get_by_test_id("step-counter")).to_contain_text(f"/ {last}")
    page.get_by_role("button", name="Restart").click()
    check(0)
    forward = page.get_by_role("button", name="Step forward")
    for step in (1, 2, 3):
        forward.click()
        check(step)
    for _ in range(5):  # faster than Python sends pages: the views catch up
        forward.click()
    check(8)
    page.get_by_role("slider", name="Step").fill(str(last))  # the scrubber, to the end
    check(last)
