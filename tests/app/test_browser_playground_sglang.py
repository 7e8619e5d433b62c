"""A playground on SGLang in a real browser on `panel serve`: "Edit a copy" of a scenario
shown on SGLang keeps SGLang and the step, and an edit moves the radix tree. Every tree
is checked against the engine's own SGLang timeline."""

from __future__ import annotations

from typing import Any

import pytest

from app.views.editor import fork
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import parse_lines
from engine.lab.play.sglang.timeline import SGLangTimeline, build_sglang_timeline
from tests.app import test_browser_serve as serve
from tests.app.page_checks import check_sglang_step
from tests.app.playground_checks import field, open_fork
from tests.app.test_browser_serve import Watched, open_app

# The same fixtures as the other `panel serve` tests (a server for this module).
server, playwright, browser, watched = serve.server, serve.playwright, serve.browser, serve.watched

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.browser

EDITED = "add_request A prompt: 1..20\nstep\nadd_request B prompt: 1..16, 99\nstep\nrun_until_idle"


def forked(mode: str, script: str | None = None) -> SGLangTimeline:
    data = fork("shared-prefix")
    if script is not None:
        steps, errors = parse_lines(script)
        assert not errors
        data["steps"] = steps
    return build_sglang_timeline(scenario_from_dict(data), mode)


def test_a_fork_on_sglang_steps_and_its_tree_follows_an_edit(watched: Watched, server: str) -> None:
    page: Any = open_app(watched, server, "?scenario=shared-prefix&mode=lpm&step=2")
    open_fork(page)
    expect(page.get_by_role("radio", name="SGLang")).to_be_checked()
    expect(page.get_by_role("radio", name="lpm")).to_be_checked()
    expect(page.get_by_role("checkbox", name="Also on SGLang")).to_be_checked()
    check_sglang_step(page, forked("lpm"), 2)  # the same step, on SGLang

    page.get_by_role("radio", name="fcfs").check()
    check_sglang_step(page, forked("fcfs"), 2)
    page.get_by_role("button", name="Step forward").click()
    check_sglang_step(page, forked("fcfs"), 3)

    field(page, "Script (one action per line)").fill(EDITED)
    edited = forked("fcfs", EDITED)
    check_sglang_step(page, edited, min(3, len(edited.steps) - 1))
    page.get_by_role("button", name="Restart").click()
    check_sglang_step(page, edited, 0)
    page.get_by_role("button", name="Step forward").click()
    check_sglang_step(page, edited, 1)

    page.get_by_role("radio", name="vLLM").check()  # the playground's vLLM side is there too
    expect(page.get_by_test_id("pool")).to_be_visible()
    expect(page.get_by_test_id("radix-tree")).to_have_count(0)
