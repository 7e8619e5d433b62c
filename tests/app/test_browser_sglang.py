"""SGLang in a real browser (issue 31 item 4): `panel serve` started here, Debian's
Chromium, headless. The engine picker switches a scenario to SGLang's timeline at the
same step, every view follows, and the address opens SGLang directly. Every count is
checked against the engine's own SGLang timeline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from app.data import timelines
from engine.lab.play.sglang.timeline import SGLangTimeline
from tests.app import test_browser_serve as serve
from tests.app.browser import chromium
from tests.app.page_checks import check_sglang_step
from tests.app.test_browser_serve import Watched, open_app

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

SCENARIO = "shared-prefix"


# The served app, Chromium and a 1280x800 context: the serve tests' own fixtures.
server, playwright, browser = serve.server, serve.playwright, serve.browser


@pytest.fixture
def watched(browser: Any, server: str) -> Iterator[Watched]:
    page = browser.new_page()
    seen = Watched(page, server.rsplit("/", 1)[0])
    yield seen
    page.close()
    assert not seen.errors, f"console errors and warnings: {seen.errors}"
    assert not seen.foreign, f"requests outside the origin: {seen.foreign}"


def sglang(mode: str) -> SGLangTimeline:
    timeline = timelines.timeline(SCENARIO, mode)
    assert isinstance(timeline, SGLangTimeline)
    return timeline


def address(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def test_the_engine_picker_switches_to_sglang_and_back_at_the_same_step(
    watched: Watched, server: str
) -> None:
    page = open_app(watched, server, f"?scenario={SCENARIO}")
    expect(page.get_by_test_id("pool")).to_be_visible()
    quiz = page.get_by_test_id("quiz")
    expect(quiz).to_be_visible()  # vLLM's steps ask questions
    forward = page.get_by_role("button", name="Step forward")
    forward.click()
    forward.click()
    expect(page.get_by_test_id("step-counter")).to_have_attribute("data-step", "2")

    page.get_by_role("radio", name="SGLang").check()
    fcfs = sglang("fcfs")
    check_sglang_step(page, fcfs, 2)
    expect(page.get_by_role("radio", name="SGLang")).to_be_checked()
    expect(quiz).to_be_visible()  # SGLang's steps ask their own (play/sglang/questions.py)
    # The mode picker offers SGLang's schedule policies, not vLLM's modes.
    expect(page.get_by_role("radio", name="fcfs")).to_be_checked()
    expect(page.get_by_role("radio", name="lpm")).to_be_visible()
    expect(page.get_by_role("radio", name="default")).to_have_count(0)
    page.wait_for_function("() => new URLSearchParams(location.search).get('mode') === 'fcfs'")
    assert address(page)["step"] == ["2"]

    forward.click()  # Step forward moves the tree and the slots
    check_sglang_step(page, fcfs, 3)
    # before S2's admission: how many tokens its walk down the tree matches
    expect(quiz).to_contain_text("walk down the radix tree")
    forward.click()
    check_sglang_step(page, fcfs, 4)

    # The code panel shows SGLang's own source; a function of radix_cache.py on pick.
    code = page.get_by_test_id("code-panel")
    focus = fcfs.steps[4].focus
    assert focus is not None
    expect(code).to_have_attribute("data-file", focus.file)
    expect(code).to_have_attribute("data-qualname", focus.qualname)
    picker = page.get_by_label("Functions that ran at this step (in the order entered)")
    label = next(o for o in picker.locator("option").all_text_contents() if "radix_cache.py" in o)
    picker.select_option(label=label)
    expect(code).to_have_attribute("data-file", "engine/sglang/radix_cache.py")
    expect(code.locator("[data-ran=true]").first).to_be_visible()

    page.get_by_role("radio", name="lpm").check()  # the other policy: the step kept
    check_sglang_step(page, sglang("lpm"), 4)

    page.get_by_role("radio", name="vLLM").check()  # back to vLLM: the step kept
    # shared-prefix has one vLLM mode: the mode picker has nothing to offer there.
    page.wait_for_function("() => new URLSearchParams(location.search).get('mode') === 'default'")
    expect(page.get_by_role("radiogroup", name="Mode")).to_be_hidden()
    expect(page.get_by_test_id("step-counter")).to_have_attribute("data-step", "4")
    expect(page.get_by_test_id("pool")).to_be_visible()
    expect(page.get_by_test_id("radix-tree")).to_have_count(0)
    expect(quiz).to_be_visible()
    expect(page.get_by_role("radio", name="lpm")).to_have_count(0)
    # And SGLang again comes back to the policy last shown there.
    page.get_by_role("radio", name="SGLang").check()
    expect(page.get_by_role("radio", name="lpm")).to_be_checked()


def test_an_address_opens_sglang(watched: Watched, server: str) -> None:
    page = open_app(watched, server, f"?scenario={SCENARIO}&mode=lpm&step=3")
    expect(page.get_by_role("radio", name="SGLang")).to_be_checked()
    expect(page.get_by_role("radio", name="lpm")).to_be_checked()
    check_sglang_step(page, sglang("lpm"), 3)
    expect(page.get_by_test_id("notice")).to_have_count(0)


def test_sglang_on_a_vllm_only_scenario_says_why_and_shows_vllm(
    watched: Watched, server: str
) -> None:
    page = open_app(watched, server, "?scenario=reset&mode=lpm")
    notice = page.get_by_test_id("notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("Ignored mode='lpm'")
    expect(notice).to_contain_text("plays on vLLM only")
    expect(page.get_by_test_id("pool")).to_be_visible()
    expect(page.get_by_test_id("engine-picker")).to_be_hidden()


def test_the_embed_on_sglang_fits_800x900_and_hides_vllms_tabs(
    playwright: Any, server: str
) -> None:
    with chromium(playwright, viewport={"width": 800, "height": 900}) as context:
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        page = open_app(watched, server, f"?embed=1&scenario={SCENARIO}")
        tabs = page.get_by_role("tab")
        expect(tabs.get_by_text("Hash chain")).to_be_visible()
        page.get_by_role("radio", name="SGLang").check()
        # The hash chain and the prefill calculator are vLLM's: their tabs go.
        expect(tabs.get_by_text("Hash chain")).to_be_hidden()
        expect(tabs.get_by_text("Prefill cost")).to_be_hidden()
        fcfs = sglang("fcfs")
        forward = page.get_by_role("button", name="Step forward")
        for step in range(len(fcfs.steps)):
            if step:
                forward.click()
            check_sglang_step(page, fcfs, step)
            assert page.evaluate("() => document.documentElement.scrollHeight") <= 900
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 800
        page.get_by_role("radio", name="vLLM").check()
        expect(tabs.get_by_text("Hash chain")).to_be_visible()
        assert not watched.errors and not watched.foreign
