"""Before Python is ready, a playground link already shows, steps and plays edits.

A playground link's early page is the app's own layout (app/page/early_page.js), its
page's document answered by the app's worker from the project's wheel alone
(app/data/early_playground.py). The server holds back Panel's wheel, so the page stays
before Python for as long as a test needs: the early page must show the engine's
timeline for the link, step, switch modes and play an edited script; the live page must
then take over at the learner's mode and step, with the edited script.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.playground.fields import LABELS, with_engines
from app.playground.fields import SCRIPT as SCRIPT_FIELD
from engine.lab.play import playground_code
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from tests.app.page_checks import expected
from tests.app.test_browser_playground import SCRIPT, check_playground_step, field, typed
from tests.site.conftest import wait_interactive
from tests.site.test_early_steps import LIVE_DOCUMENT_JS, held_page, python_live

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.site, pytest.mark.browser]

__all__ = ["held_page"]  # the fixture, shared with the early steps' tests

EARLY_TIMEOUT_MS = 60_000
# The early page goes once the live page shows the learner's script: a traced build of
# it in Pyodide, which takes seconds when the other test process has the second core.
HANDOVER_TIMEOUT_MS = 30_000
LABEL = LABELS[SCRIPT_FIELD]


def link(data: dict[str, Any], mode: str, step: int) -> str:
    code = playground_code.encode(data)
    return f"?scenario=playground&playground={code}&mode={mode}&step={step}"


def check_early_step(early: Any, timeline: Timeline, step: int) -> None:
    """The early page shows the engine's step: the counter, every view's position, and
    the pool, the requests, the log and the counters as the engine has them."""
    last = len(timeline.steps) - 1
    expect(early.get_by_test_id("step-counter")).to_have_text(f"Step {step} / {last}")
    at = f"{timeline.scenario}/{timeline.mode}@{step}"
    expect(early.locator(f'[data-at]:not([data-at="{at}"])')).to_have_count(0)
    expect(early.locator(f'[data-at="{at}"]').first).to_be_attached()
    want = expected(timeline, step)
    blocks = early.locator('[data-testid^="block-"]').evaluate_all(
        "els => els.map(e => [e.dataset.testid, e.dataset.refCnt, e.dataset.state, e.dataset.hash])"
    )
    requests = early.locator('[data-testid="requests"] tr[data-request-id]').evaluate_all(
        "els => els.map(e => [e.dataset.requestId, e.dataset.status, e.dataset.computed,"
        " e.dataset.blockIds, e.dataset.preemptions])"
    )
    log = early.locator('[data-testid="log"] .line').all_inner_texts()
    metrics = early.get_by_test_id("metrics").evaluate(
        "e => [e.dataset.queries, e.dataset.hits, e.dataset.preemptedRequests,"
        " e.dataset.preemptedQueries, e.dataset.preemptedHits, e.dataset.resets]"
    )
    assert (blocks, requests, log, metrics) == (
        want["blocks"],
        want["requests"],
        want["log"],
        want["metrics"],
    )
    narration = " ".join(timeline.narration_text(timeline.steps[step]).split())
    expect(early.get_by_test_id("narration")).to_contain_text(narration)


def open_early(held_page: Any, query: str) -> tuple[Any, Any, Any, Any]:
    page, run, release = held_page(query, early=False)  # (its page waits for the worker)
    early = page.locator(".pcl-early-page")
    expect(early).to_be_visible(timeout=EARLY_TIMEOUT_MS)
    return page, run, release, early


def wait_for_live_code(page: Any, step: int) -> None:
    """Wait until the live page's code panel shows ``step``. Python opened the link the
    worker was started with (its mode, its playground), so the player asks it for the
    learner's timeline, whose code then shows: until that answer (seconds on a busy
    machine) the views are the early page's, at the learner's step, and the code panel
    is empty, as before Python. An empty panel names no step: wait_for_step passes."""
    expect(page.get_by_test_id("code-panel")).to_have_attribute(
        "data-step", str(step), timeout=HANDOVER_TIMEOUT_MS
    )


def test_a_playground_link_steps_before_python_and_the_live_page_keeps_the_mode_and_step(
    held_page: Any,
) -> None:
    data = typed(20, 4, SCRIPT)
    keep = build_timeline(scenario_from_dict(data), "keep")
    page, run, release, early = open_early(held_page, link(data, "keep", 2))
    check_early_step(early, keep, 2)
    expect(page.get_by_test_id("early-note")).to_contain_text("the editor's fields work now")
    early.get_by_role("button", name="Step forward").click()
    check_early_step(early, keep, 3)
    early.get_by_role("radio", name="preempt").check()
    preempt = build_timeline(scenario_from_dict(data), "preempt")
    check_early_step(early, preempt, 3)  # the player's rule: a mode keeps the step
    early.get_by_role("button", name="Step forward").click()
    check_early_step(early, preempt, 4)
    assert not python_live(page)

    release.set()
    wait_interactive(page, run)
    expect(early).to_have_count(0, timeout=HANDOVER_TIMEOUT_MS)
    # No flicker: the live page opened where the learner was.
    assert page.get_by_test_id("step-counter").inner_text() == f"Step 4 / {len(preempt.steps) - 1}"
    wait_for_live_code(page, 4)  # (Python opened the link's mode: keep, at step 2)
    check_playground_step(page, preempt, 4)
    expect(page.get_by_role("radio", name="preempt")).to_be_checked()
    page.wait_for_url("**mode=preempt&step=4**")  # Python learnt the mode and step
    page.get_by_role("button", name="Step forward").click()
    check_playground_step(page, preempt, 5)


# Once the early page shows: each message the page posts to a worker after the early page
# has gone (the live page's, to Python) waits, in order, until the test calls
# `__letPythonHear()`: Python answers as late as the test wants.
HOLD_PYTHON_JS = """() => {
  const post = Worker.prototype.postMessage
  const held = []
  window.__letPythonHear = () => {
    Worker.prototype.postMessage = post
    held.splice(0).forEach(([worker, args]) => post.apply(worker, args))
  }
  Worker.prototype.postMessage = function (...args) {
    if (document.querySelector('.pcl-early-page')) { return post.apply(this, args) }
    held.push([this, args])
  }
}"""


def test_a_step_while_python_opens_the_learners_mode_counts(held_page: Any) -> None:
    """Python's first document holds the link's mode only (keep): at the handover the
    player asks Python for the learner's (preempt). Until Python answers (seconds on a
    busy machine; held back here), the page shows the early page's timeline, a step
    moves the counter and the views together, and Python's answer keeps that step."""
    data = typed(20, 4, SCRIPT)
    preempt = build_timeline(scenario_from_dict(data), "preempt")
    page, run, release, early = open_early(held_page, link(data, "keep", 2))
    early.get_by_role("button", name="Step forward").click()
    early.get_by_role("radio", name="preempt").check()
    early.get_by_role("button", name="Step forward").click()
    check_early_step(early, preempt, 4)
    page.evaluate(HOLD_PYTHON_JS)

    release.set()
    wait_interactive(page, run)
    assert f"{preempt.scenario}/preempt" not in page.evaluate(LIVE_DOCUMENT_JS)["held"]
    page.get_by_role("button", name="Step forward").click()
    check_early_step(page, preempt, 5)  # (the code panel empty, as before Python)
    page.evaluate("() => window.__letPythonHear()")
    wait_for_live_code(page, 5)
    check_playground_step(page, preempt, 5)
    expect(page.get_by_role("radio", name="preempt")).to_be_checked()
    page.wait_for_url("**mode=preempt&step=5**")


BOTH_ENGINES_SCRIPT = (
    "add_request A max_tokens=4 prompt: 1..8\nstep\nadd_request B max_tokens=2 prompt: 1..6, 30"
    "\nstep 3"
)


@pytest.mark.parametrize("sglang", [True, False])
def test_a_playground_link_shows_the_engine_picker_where_the_live_page_has_it(
    held_page: Any, sglang: bool
) -> None:
    """The early page is laid out at the empty playground (vLLM only): a link to a
    playground on both engines still shows the engine picker before Python, where the
    live page has it (the mode picker beside it does not jump at the handover)."""
    data = with_engines(typed(20, 4, BOTH_ENGINES_SCRIPT), sglang)
    default = build_timeline(scenario_from_dict(data), "default")
    page, run, release, early = open_early(held_page, link(data, "default", 2))
    check_early_step(early, default, 2)
    engine = early.get_by_test_id("engine-picker")
    keep = early.get_by_role("radio", name="keep")
    if sglang:
        expect(engine).to_be_visible()
    else:
        expect(engine).to_be_hidden()
    before = keep.bounding_box()
    release.set()
    wait_interactive(page, run)
    expect(early).to_have_count(0, timeout=HANDOVER_TIMEOUT_MS)
    if sglang:
        expect(page.get_by_test_id("engine-picker")).to_be_visible()
    else:
        expect(page.get_by_test_id("engine-picker")).to_be_hidden()
    after = page.get_by_role("radio", name="keep").bounding_box()
    assert abs(before["x"] - after["x"]) <= 16 and abs(before["y"] - after["y"]) <= 16


def test_an_edit_before_python_plays_at_once_and_the_live_page_takes_it_over(
    held_page: Any,
) -> None:
    data = typed(20, 4, SCRIPT)
    page, run, release, early = open_early(held_page, link(data, "keep", 3))
    script = early.get_by_label(LABEL)
    expect(script).to_have_value(SCRIPT)
    # Every field plays before Python (the app's worker), as in the live editor.
    blocks = early.get_by_label(LABELS["num_gpu_blocks"])
    blocks.fill("1")
    expect(early.get_by_role("alert")).to_contain_text("num_gpu_blocks must be from 2")
    blocks.fill("20")
    expect(early.get_by_role("alert")).to_have_count(0)
    script.fill("jump 3")  # cannot be played: says why, the last valid timeline stays
    expect(early.get_by_role("alert")).to_contain_text("unknown action 'jump'")
    check_early_step(early, build_timeline(scenario_from_dict(data), "keep"), 3)

    edited_script = SCRIPT + "\nadd_request C prompt: 1..8\nstep"
    edited = build_timeline(scenario_from_dict(typed(20, 4, edited_script)), "keep")
    script.fill(edited_script)
    expect(early.get_by_role("alert")).to_have_count(0)  # the message goes, as the editor's
    check_early_step(early, edited, 3)
    assert not python_live(page)

    release.set()
    wait_interactive(page, run)
    expect(early).to_have_count(0, timeout=HANDOVER_TIMEOUT_MS)
    wait_for_live_code(page, 3)  # (Python opened the link's playground, not the edited one)
    check_playground_step(page, edited, 3)
    expect(field(page, LABEL)).to_have_value(edited_script)
    page.get_by_role("button", name="Step forward").click()
    check_playground_step(page, edited, 4)
