"""The app in a real browser: `panel serve` started here, Debian's Chromium, headless.

Every check compares the page with the engine's own timeline (build_timeline), so
a wrong cell, queue order or highlighted line fails the test.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from app.data import timelines
from app.data.url import playground_query
from app.views.editor import fork
from engine.lab.play import playground_code
from engine.lab.play.vllm.timeline import Timeline
from tests.app.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    REPO,
    chromium,
    panel_serve,
    panel_serve_with_output,
)
from tests.app.page_checks import (
    PHONE,
    check_reads_on_a_phone,
    check_step,
    exercise_keyboard,
    wait_for_step,
)

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "test-artifacts"
MODES = timelines.scenario("reset").modes


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with panel_serve() as url:
        yield url


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Any) -> Iterator[Any]:
    with chromium(playwright, viewport={"width": 1280, "height": 800}) as context:
        yield context


@pytest.fixture(scope="module")
def launched(playwright: Any) -> Iterator[Any]:
    """One Chromium for the tests that need a context of their own (a size, a phone, a
    first visit): a new context takes about 0.5 s, a launch 2 s and more."""
    chrome = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    try:
        yield chrome
    finally:
        chrome.close()


@contextlib.contextmanager
def own_context(launched: Any, **options: Any) -> Iterator[Any]:
    """A fresh context (its own storage: a first visit) of the module's Chromium."""
    context = launched.new_context(**options)
    try:
        yield context
    finally:
        context.close()


class Watched:
    """A page plus what it logged and fetched, checked when the test ends."""

    def __init__(self, page: Any, origin: str) -> None:
        self.page = page
        self.origin = origin
        self.errors: list[str] = []
        self.foreign: list[str] = []
        # Errors and warnings alike: the console of every page stays clean (a simulated
        # vLLM line or a Bokeh warning there reads as the page's own trouble).
        page.on("console", self._on_console)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", self._on_request)

    def _on_console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def _on_request(self, request: Any) -> None:
        url = request.url
        if not (url.startswith(self.origin) or url.startswith(("blob:", "data:"))):
            self.foreign.append(url)


@pytest.fixture
def watched(browser: Any, server: str) -> Iterator[Watched]:
    page = browser.new_page()
    origin = server.rsplit("/", 1)[0]
    seen = Watched(page, origin)
    yield seen
    page.close()
    assert not seen.errors, f"console errors and warnings: {seen.errors}"
    assert not seen.foreign, f"requests outside the origin: {seen.foreign}"


def open_app(watched: Watched, server: str, query: str = "") -> Any:
    page = watched.page
    page.goto(f"{server}{query}")
    expect(page.get_by_test_id("step-counter")).to_be_visible(timeout=30_000)
    return page


@pytest.mark.parametrize("mode", MODES)
def test_every_step_of_every_mode_matches_the_engine(
    watched: Watched, server: str, mode: str
) -> None:
    timeline = timelines.timeline("reset", mode)
    page = open_app(watched, server, f"?scenario=reset&mode={mode}")
    expect(page.get_by_role("radio", name=mode)).to_be_checked()
    check_step(page, timeline, 0)
    forward = page.get_by_role("button", name="Step forward")
    for step in range(1, len(timeline.steps)):
        forward.click()
        check_step(page, timeline, step)
    expect(forward).to_be_disabled()
    if mode == "keep":  # the reset guard is shown as a change against released code
        page.get_by_role("button", name="Restart").click()
        forward.click()
        check_step(page, timeline, 1)
        panel = page.get_by_test_id("code-panel")
        expect(panel).to_have_attribute("data-diff", "true")
        expect(panel.locator(".ln.del", has_text="if num_used_blocks != 1:")).to_have_count(1)
        expect(panel.locator(".ln.add", has_text="and not allow_used_blocks")).to_have_count(1)
        for _step in range(2, len(timeline.steps)):
            forward.click()
        wait_for_step(page, timeline, len(timeline.steps) - 1)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"reset-{mode}-last-step.png"), full_page=True)


# What the player does when more of the bundle arrives: the position now, announced again.
ANNOUNCE_AGAIN = """() => document.dispatchEvent(new CustomEvent('pcl-ask', { detail: {
    reply: (at) => document.dispatchEvent(new CustomEvent('pcl-at', { detail: at })) } }))"""


def test_function_picker_shows_another_function_until_the_next_step(
    watched: Watched, server: str
) -> None:
    timeline = timelines.timeline("reset", "preempt")
    page = open_app(watched, server, "?scenario=reset&mode=preempt&step=1")
    wait_for_step(page, timeline, 1)
    picker = page.get_by_label("Functions that ran at this step (in the order entered)")
    step = timeline.steps[1]
    assert step.focus is not None
    expect(picker.locator("option")).to_have_count(len(step.code))
    panel = page.get_by_test_id("code-panel")
    expect(panel).to_have_attribute("data-qualname", step.focus.qualname)
    other = next(i for i, trace in enumerate(step.code) if trace != step.focus)
    picker.select_option(str(other))
    expect(panel).to_have_attribute("data-qualname", step.code[other].qualname)
    ran = sorted(step.code[other].lines)
    expect(panel.locator("[data-ran]")).to_have_count(len(ran))
    # The rest of the bundle, arriving after the pick (late under load), announces the same
    # position again: the pick stays (it once snapped back to the focus function).
    page.evaluate(ANNOUNCE_AGAIN)
    expect(picker).to_have_value(str(other))
    expect(panel).to_have_attribute("data-qualname", step.code[other].qualname)
    page.get_by_role("button", name="Step forward").click()
    wait_for_step(page, timeline, 2)
    focus = timeline.steps[2].focus
    assert focus is not None
    expect(panel).to_have_attribute("data-qualname", focus.qualname)


def test_step_back_restart_and_scrub(watched: Watched, server: str) -> None:
    timeline = timelines.timeline("reset", "preempt")
    page = open_app(watched, server, "?mode=preempt&step=4")
    check_step(page, timeline, 4)
    page.get_by_role("button", name="Step back").click()
    check_step(page, timeline, 3)
    page.get_by_role("button", name="Restart").click()
    check_step(page, timeline, 0)
    expect(page.get_by_role("button", name="Step back")).to_be_disabled()
    # Scrub: click along the slider's track; whatever step it lands on must match.
    track = page.get_by_role("slider", name="Step")
    box = track.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)
    counter = page.get_by_test_id("step-counter")
    expect(counter).not_to_have_text(f"Step 0 / {len(timeline.steps) - 1}")
    step = int(counter.get_attribute("data-step"))
    assert 0 < step < len(timeline.steps)
    check_step(page, timeline, step)


def test_play_runs_to_the_end_and_pause_stops(watched: Watched, server: str) -> None:
    timeline = timelines.timeline("reset", "default")
    last = len(timeline.steps) - 1
    page = open_app(watched, server, "?mode=default&step=5")
    page.get_by_label("Speed").select_option(label="4 steps/s")
    page.get_by_role("button", name="Play").click()
    expect(page.get_by_role("button", name="Pause")).to_be_visible()
    expect(page.get_by_test_id("step-counter")).to_have_text(
        f"Step {last} / {last}", timeout=10_000
    )
    expect(page.get_by_role("button", name="Play")).to_be_visible()
    check_step(page, timeline, last)


def test_keyboard(watched: Watched, server: str) -> None:
    timeline = timelines.timeline("reset", "keep")
    page = open_app(watched, server, "?mode=keep")
    exercise_keyboard(page, timeline)
    step = int(page.get_by_test_id("step-counter").get_attribute("data-step"))
    # Keys typed into a text field are the field's, not the simulator's.
    page.evaluate(
        "() => { const i = document.createElement('input'); i.type = 'text';"
        " i.id = 'probe'; document.body.prepend(i); }"
    )
    page.locator("#probe").focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Home")
    page.keyboard.press(" ")
    page.wait_for_timeout(400)
    expect(page.get_by_test_id("step-counter")).to_have_attribute("data-step", str(step))
    expect(page.get_by_role("button", name="Play")).to_be_visible()
    # No early page under `panel serve` (the static site's, app/page/early_page.js).
    expect(page.locator("body.pcl-early")).to_have_count(0)
    expect(page.get_by_test_id("early-note")).to_have_count(0)


def test_a_mode_switch_keeps_the_step_and_keys_never_switch_a_picker(
    watched: Watched, server: str
) -> None:
    """Comparing the modes at one step takes no walk back; an arrow on a focused picker
    steps instead of switching it; End goes to the last step."""
    preempt = timelines.timeline("reset", "preempt")
    keep = timelines.timeline("reset", "keep")
    page = open_app(watched, server, "?scenario=reset&mode=keep&step=5")
    check_step(page, keep, 5)
    page.get_by_role("radio", name="preempt").check()
    check_step(page, preempt, 5)
    page.wait_for_function("() => location.search.includes('mode=preempt&step=5')")
    page.get_by_role("radio", name="preempt").focus()
    page.keyboard.press("ArrowRight")
    check_step(page, preempt, 6)
    expect(page.get_by_role("radio", name="preempt")).to_be_checked()
    picker = page.get_by_label("Scenario")
    picker.focus()
    page.keyboard.press("ArrowLeft")
    check_step(page, preempt, 5)
    expect(picker).to_have_value("reset")
    page.get_by_test_id("narration").click()
    page.keyboard.press("End")
    check_step(page, preempt, len(preempt.steps) - 1)
    page.get_by_role("radio", name="keep").check()
    check_step(page, keep, len(keep.steps) - 1)


def test_the_first_tab_stop_skips_to_the_step_controls(watched: Watched, server: str) -> None:
    """A keyboard reaches the controls in one stop, not a dozen: the skip link shows when
    focused and hands focus to Step forward, where Enter steps."""
    keep = timelines.timeline("reset", "keep")
    page = open_app(watched, server, "?scenario=reset&mode=keep&step=1")
    check_step(page, keep, 1)
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the step controls")
    expect(skip).to_be_focused()
    assert skip.bounding_box()["y"] >= 0  # shown while focused
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Step forward")).to_be_focused()
    page.keyboard.press("Enter")
    check_step(page, keep, 2)


def query_of(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def test_deep_link_opens_the_state_and_follows_the_learner(watched: Watched, server: str) -> None:
    timeline = timelines.timeline("reset", "keep")
    page = open_app(watched, server, "?scenario=reset&mode=keep&step=5")
    check_step(page, timeline, 5)
    expect(page.get_by_role("radio", name="keep")).to_be_checked()
    expect(page.get_by_test_id("notice")).to_have_count(0)
    page.get_by_role("button", name="Step forward").click()
    check_step(page, timeline, 6)
    page.wait_for_function("() => location.search.includes('step=6')")
    assert query_of(page)["mode"] == ["keep"] and query_of(page)["step"] == ["6"]
    page.get_by_role("radio", name="preempt").check()
    check_step(page, timelines.timeline("reset", "preempt"), 6)  # the step kept
    page.wait_for_function("() => location.search.includes('mode=preempt')")
    # The link in the address bar reopens the same state.
    page.get_by_role("button", name="Step back").click()
    page.wait_for_function("() => location.search.includes('step=5')")
    page.goto(page.url)
    check_step(page, timelines.timeline("reset", "preempt"), 5)


def test_the_scenario_picker_opens_a_scenario_and_back_returns(
    watched: Watched, server: str
) -> None:
    page = open_app(watched, server, "?scenario=reset&mode=keep&step=3")
    picker = page.get_by_label("Scenario")
    expect(picker).to_have_value("reset")
    picker.select_option(label=timelines.scenario("eviction-order").title)
    eviction = timelines.timeline("eviction-order", "default")
    check_step(page, eviction, 0)
    expect(page.get_by_role("radiogroup", name="Mode")).to_be_hidden()  # one mode only
    page.wait_for_function("() => location.search.includes('scenario=eviction-order')")
    page.get_by_role("button", name="Step forward").click()
    check_step(page, eviction, 1)
    page.wait_for_function("() => location.search.includes('step=1')")
    # Back returns to the scenario, mode and step the learner left; Forward comes back.
    page.go_back()
    check_step(page, timelines.timeline("reset", "keep"), 3)
    expect(page.get_by_role("radio", name="keep")).to_be_checked()
    expect(picker).to_have_value("reset")
    page.go_forward()
    check_step(page, eviction, 1)
    picker.select_option("reset")
    check_step(page, timelines.timeline("reset", "default"), 0)
    expect(page.get_by_role("radio", name="default")).to_be_checked()


def test_back_returns_to_a_step_taken_just_before_a_scenario_pick(
    watched: Watched, server: str
) -> None:
    """The address waits a moment before it writes a step; a scenario picked within that
    wait must not lose the step from the entry Back returns to."""
    page = open_app(watched, server, "?scenario=reset&mode=keep&step=3")
    forward = page.get_by_role("button", name="Step forward").element_handle()
    picker = page.get_by_label("Scenario").element_handle()
    # Both in one go, as a quick learner (or a keyboard) does.
    page.evaluate(
        """([forward, picker]) => {
            forward.click()
            picker.value = 'eviction-order'
            picker.dispatchEvent(new Event('change'))
        }""",
        [forward, picker],
    )
    check_step(page, timelines.timeline("eviction-order", "default"), 0)
    page.wait_for_function("() => location.search.includes('scenario=eviction-order')")
    page.go_back()
    check_step(page, timelines.timeline("reset", "keep"), 4)
    assert query_of(page)["step"] == ["4"]


@pytest.mark.parametrize(
    ("query", "ignored"),
    [
        ("?scenario=nope", ["scenario"]),
        ("?mode=turbo&step=abc", ["mode", "step"]),
        ("?mode=keep&step=99", ["step"]),
        ("?mode=keep&step=-2", ["step"]),
    ],
)
def test_invalid_deep_links_fall_back_with_a_notice(
    watched: Watched, server: str, query: str, ignored: list[str]
) -> None:
    page = open_app(watched, server, query)
    notice = page.get_by_test_id("notice")
    expect(notice).to_be_visible()
    for name in ignored:
        expect(notice).to_contain_text(f"Ignored {name}=")
    mode = "keep" if "mode=keep" in query else timelines.scenario("reset").modes[0]
    check_step(page, timelines.timeline("reset", mode), 0)


def test_embed_fits_an_800px_iframe(launched: Any, server: str) -> None:
    with own_context(launched, viewport={"width": 800, "height": 700}) as context:
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        page = open_app(watched, server, "?embed=1&mode=keep&step=1")
        check_step(page, timelines.timeline("reset", "keep"), 1)
        expect(page.get_by_test_id("app-header")).to_have_count(0)
        expect(page.get_by_test_id("embed-title")).to_be_visible()
        expect(page.get_by_test_id("embed-title")).to_contain_text("vLLM's prefix cache")
        expect(page.get_by_test_id("embed-modes")).to_contain_text("preempt")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 800
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "embed-800.png"), full_page=True)
        # The write-up's frame is 800x900: the flagship never scrolls in it, at any step
        # of keep nor at the other modes' last steps (docs/static-site.md).
        height = "() => document.documentElement.scrollHeight"
        keep = timelines.timeline("reset", "keep")
        for step in range(2, len(keep.steps)):
            page.get_by_role("button", name="Step forward").click()
            wait_for_step(page, keep, step)
            assert page.evaluate(height) <= 900, f"keep step {step}"
        for mode in ("default", "preempt"):
            page.get_by_role("radio", name=mode).check()
            timeline = timelines.timeline("reset", mode)
            wait_for_step(page, timeline, len(timeline.steps) - 1)
            assert page.evaluate(height) <= 900, mode
        assert not watched.errors and not watched.foreign


def test_phone_width_stacks_without_horizontal_scroll(launched: Any, server: str) -> None:
    with own_context(launched, viewport={"width": 390, "height": 844}) as context:
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        page = open_app(watched, server, "?mode=default&step=7")
        timeline = timelines.timeline("reset", "default")
        check_step(page, timeline, 7)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        pool = page.get_by_test_id("pool").bounding_box()
        code = page.get_by_test_id("code-panel").bounding_box()
        assert code["y"] > pool["y"] + pool["height"]  # stacked, not side by side
        page.get_by_role("button", name="Step forward").click()
        check_step(page, timeline, 8)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "phone-390.png"), full_page=True)
        assert not watched.errors and not watched.foreign


# Every kind of page a reader opens: (its address, a test id it shows once it is up).
EVERY_PAGE = {
    "start": ("", "start-page"),
    "scenario": ("?scenario=reset&mode=keep&step=3", "step-counter"),
    "embed": ("?embed=true", "step-counter"),
    "playground": (
        "?" + urlencode(playground_query(playground_code.encode(fork("reset")), "default", 0)),
        "step-counter",
    ),
    "lab": ("?lab=shared-prefix", "lab-outcome"),
}


def open_page(watched: Watched, server: str, kind: str) -> Any:
    """Open a page of EVERY_PAGE; the lab's, once its first run is drawn."""
    query, testid = EVERY_PAGE[kind]
    page = watched.page
    page.goto(f"{server}{query}")
    expect(page.get_by_test_id(testid)).to_be_visible(timeout=60_000)
    if kind == "lab":
        expect(page.get_by_text("Done:")).to_be_visible(timeout=60_000)
    return page


@pytest.mark.parametrize("kind", list(EVERY_PAGE))
def test_a_phone_reads_every_page_at_its_own_width(launched: Any, server: str, kind: str) -> None:
    with own_context(launched, **PHONE) as context:
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        page = open_page(watched, server, kind)
        check_reads_on_a_phone(page)
        assert not watched.errors and not watched.foreign, watched.errors


@pytest.mark.parametrize("kind", list(EVERY_PAGE))
def test_every_page_leaves_the_console_clean(watched: Watched, server: str, kind: str) -> None:
    """No error and no warning (the fixture checks): no simulated vLLM line, and no
    Bokeh range warning while the lab's charts wait for their first run."""
    open_page(watched, server, kind)
    watched.page.wait_for_timeout(500)  # what the page logs once it is up


# What the simulated server writes: vLLM's lines and uvicorn's access lines.
SIMULATED_LINES = ("reset prefix cache", "Resetting prefix cache", "/reset_prefix_cache HTTP")


def test_the_simulated_server_writes_to_the_page_log_only(launched: Any) -> None:
    """A teacher's terminal shows `panel serve`'s own lines, not the simulated vLLM's as if
    real requests had hit it; the page's log panel shows them."""
    with (
        panel_serve_with_output() as (server, output),
        own_context(launched, viewport={"width": 1280, "height": 800}) as context,
    ):
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        for name, mode in (("reset", "default"), ("api-layer", "keep")):
            timeline = timelines.timeline(name, mode)
            page = open_app(watched, server, f"?scenario={name}&mode={mode}")
            forward = page.get_by_role("button", name="Step forward")
            for _step in range(1, len(timeline.steps)):
                forward.click()
            wait_for_step(page, timeline, len(timeline.steps) - 1)
            shown = [line.message for s in timeline.steps for line in s.snapshot.logs]
            expect(page.get_by_test_id("log")).to_contain_text(shown[-1].splitlines()[0])
        printed = output()
        assert "Bokeh app running" in printed  # this is the server's terminal
        assert [
            line for line in printed.splitlines() if any(s in line for s in SIMULATED_LINES)
        ] == []
        assert not watched.errors and not watched.foreign, watched.errors


# A projector's screen: the workshop's first screen.
PROJECTOR = {"width": 1280, "height": 720}


def longest_narration() -> tuple[str, int]:
    """The mode and step of the flagship whose narration is longest."""
    lengths = {
        (mode, index): len(dict(timeline.narration)[step.narration_key])
        for mode in MODES
        for timeline in [timelines.timeline("reset", mode)]
        for index, step in enumerate(timeline.steps)
    }
    return max(lengths, key=lambda at: lengths[at])


def test_a_projector_shows_the_pool_and_the_narration_on_the_first_screen(
    launched: Any, server: str
) -> None:
    """At 1280x720, on a first visit ("How to read this" open), at the flagship's longest
    narration: the narration whole, and the pool's first row of blocks, in view; the
    narration takes the page's width."""
    mode, step = longest_narration()
    with own_context(launched, viewport=PROJECTOR) as context:
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        page = open_app(watched, server, f"?scenario=reset&mode={mode}&step={step}")
        wait_for_step(page, timelines.timeline("reset", mode), step)
        expect(page.locator("details.howto-box")).to_have_attribute("open", "")
        narration = page.get_by_test_id("narration").bounding_box()
        assert narration["y"] + narration["height"] <= PROJECTOR["height"], narration
        first_block = page.get_by_test_id("block-0").bounding_box()
        assert first_block["y"] + first_block["height"] <= PROJECTOR["height"], first_block
        text = page.locator(".narration p").first.bounding_box()
        assert text["width"] >= 0.9 * (narration["width"] - 40), (text, narration)
        assert not watched.errors and not watched.foreign, watched.errors


def test_a_collapsed_how_to_read_stays_collapsed_across_pages(launched: Any, server: str) -> None:
    with own_context(launched, viewport=PROJECTOR) as context:
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        page = open_app(watched, server, "?scenario=reset&mode=keep")
        howto = page.locator("details.howto-box")
        expect(howto).to_have_attribute("open", "")  # a first visit: open
        howto.locator("summary").click()
        expect(howto).not_to_have_attribute("open", "")
        page.get_by_role("button", name="Step forward").click()
        expect(page.get_by_test_id("step-counter")).to_have_attribute("data-step", "1")
        expect(howto).not_to_have_attribute("open", "")
        # Another scenario, by the picker and by its address; a reload.
        page.get_by_label("Scenario").select_option("eviction-order")
        expect(page.get_by_test_id("app-header")).to_contain_text(
            timelines.scenario("eviction-order").title
        )
        expect(howto).not_to_have_attribute("open", "")
        open_app(watched, server, "?scenario=cache-salt")
        expect(page.get_by_test_id("app-header")).to_contain_text(
            timelines.scenario("cache-salt").title
        )
        expect(howto).not_to_have_attribute("open", "")
        # Opened again, it stays open.
        howto.locator("summary").click()
        expect(howto).to_have_attribute("open", "")
        page.reload()
        expect(page.get_by_test_id("step-counter")).to_be_visible(timeout=30_000)
        expect(howto).to_have_attribute("open", "")
        assert not watched.errors and not watched.foreign, watched.errors


def every_scenario() -> list[tuple[str, str]]:
    """Each scenario in its first mode (reset's modes are all played above)."""
    return [(n, timelines.scenario(n).modes[0]) for n in timelines.names() if n != "reset"]


@pytest.mark.parametrize(("name", "mode"), every_scenario())
def test_every_scenario_opens_by_deep_link_and_plays_to_the_end(
    watched: Watched, server: str, name: str, mode: str
) -> None:
    timeline = timelines.timeline(name, mode)
    page = open_app(watched, server, f"?scenario={name}")
    expect(page.get_by_test_id("app-header")).to_contain_text(timeline.title)
    check_step(page, timeline, 0)
    if len(timeline.modes) == 1:
        expect(page.get_by_role("radio", name=mode)).to_be_hidden()
    expect(page.get_by_test_id("offload")).to_have_count(
        1 if timeline.steps[0].snapshot.offload else 0
    )
    forward = page.get_by_role("button", name="Step forward")
    for step in range(1, len(timeline.steps)):
        forward.click()
        check_step(page, timeline, step)
    expect(forward).to_be_disabled()


def test_crash_site_shows_the_dead_engine_and_the_fix_as_a_diff(
    watched: Watched, server: str
) -> None:
    timeline = timelines.timeline("keep-offload-crash", "keep")
    dead = next(i for i, s in enumerate(timeline.steps) if s.snapshot.engine_dead)
    page = open_app(watched, server, f"?scenario=keep-offload-crash&step={dead}")
    check_step(page, timeline, dead)
    expect(page.get_by_test_id("engine-dead")).to_be_visible()
    panel = page.get_by_test_id("code-panel")
    expect(panel).to_have_attribute("data-diff", "true")
    current = panel.locator("[data-current]")
    expect(current).to_contain_text("assert primary_hash is not None")
    expect(panel.locator(".ln.add", has_text="if primary_hash is None:")).to_have_count(1)
    # The code box scrolled (not the page) so the failed line is in view.
    inside = current.evaluate(
        "el => { const box = el.closest('.code-scroll').getBoundingClientRect();"
        " const r = el.getBoundingClientRect(); return r.top >= box.top && r.bottom <= box.bottom }"
    )
    assert inside


def test_prefill_cost_seed_example_and_bad_input(watched: Watched, server: str) -> None:
    timeline = timelines.timeline("exact-duplicate", "default")
    last = len(timeline.steps) - 1
    page = open_app(watched, server, f"?scenario=exact-duplicate&step={last}")
    check_step(page, timeline, last)
    panel = page.get_by_test_id("prefill-cost")
    request = timeline.steps[last].snapshot.requests[-1]
    expect(panel).to_have_attribute("data-valid", "true")
    expect(page.get_by_label("cached prefix (tokens)")).to_have_value(
        str(request.num_cached_tokens)
    )
    page.get_by_role("button", name="Agent-prompt example (2,200 / 2,000)").click()
    for figure in ("36.60 TFLOP", "3.43 TFLOP", "10.7\N{MULTIPLICATION SIGN}", "90.6 %", "74.5 ms"):
        expect(panel).to_contain_text(figure)
    field = page.get_by_label("cached prefix (tokens)")
    field.fill("2200")
    field.press("Enter")
    expect(panel).to_have_attribute("data-valid", "false")
    expect(panel).to_contain_text("shorter than the prompt")
    field.fill("twelve")
    field.press("ArrowLeft")  # a key in a text field is the field's, not the simulator's
    field.press("Enter")
    expect(panel).to_contain_text("must be a number")
    expect(page.get_by_test_id("step-counter")).to_have_attribute("data-step", str(last))


def test_hash_chain_compares_two_requests(watched: Watched, server: str) -> None:
    timeline = timelines.timeline("cache-salt", "default")
    last = len(timeline.steps) - 1
    snapshot = timeline.steps[last].snapshot
    page = open_app(watched, server, f"?scenario=cache-salt&step={last}")
    check_step(page, timeline, last)
    first, newest = snapshot.requests[0], snapshot.requests[-1]
    page.get_by_label("Compare with").select_option(first.request_id)
    chain = page.get_by_test_id("hash-chain")
    expect(chain).to_have_attribute("data-other", first.request_id)
    expect(chain).to_have_attribute("data-other-hashes", " ".join(first.block_hash_labels))
    same = [
        str(a == b).lower()
        for a, b in zip(newest.block_hash_labels, first.block_hash_labels, strict=False)
    ]
    assert chain.locator("[data-same]").evaluate_all("els => els.map(e => e.dataset.same)") == same


def test_the_hashing_cost_is_measured_on_the_server_on_request(
    watched: Watched, server: str
) -> None:
    page = open_app(watched, server, "?scenario=cache-salt")
    expect(page.get_by_test_id("hash-cost")).to_have_count(0)
    page.get_by_role("button", name="Measure the hashing cost here").click()
    measured = page.get_by_test_id("hash-cost")
    expect(measured).to_contain_text("measured on this server")
    assert float(measured.locator('tr[data-name="sha256"]').get_attribute("data-us") or 0) > 0
    xxhash = measured.locator('tr[data-name="xxhash"]')
    if importlib.util.find_spec("xxhash") is None:  # the server runs this Python
        expect(xxhash).to_contain_text("needs the xxhash package")
    else:
        expect(xxhash).to_have_attribute("data-us", re.compile(r"^[0-9.]+$"))


SCREENSHOTS = [
    ("reset", "keep", "reset"),
    ("prepend-token", "default", "last"),
    ("cache-salt", "default", "last"),
    ("keep-offload-crash", "keep", "dead"),
    ("api-layer", "keep", "last"),
    ("exact-duplicate", "default", "last"),
]


def shot_step(timeline: Timeline, which: str) -> int:
    steps = timeline.steps
    if which == "reset":
        return next(i for i, s in enumerate(steps) if s.label.startswith("reset_prefix_cache"))
    if which == "dead":
        return next(i for i, s in enumerate(steps) if s.snapshot.engine_dead)
    return len(steps) - 1


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["1280", "390"])
def test_screenshots_fit_the_width(launched: Any, server: str, size: tuple[int, int]) -> None:
    """The pages a reader is sent to, at a laptop's and a phone's width: no sideways scroll."""
    width, height = size
    ARTIFACTS.mkdir(exist_ok=True)
    with own_context(launched, viewport={"width": width, "height": height}) as context:
        for name, mode, which in SCREENSHOTS:
            timeline = timelines.timeline(name, mode)
            step = shot_step(timeline, which)
            watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
            page = open_app(watched, server, f"?scenario={name}&mode={mode}&step={step}")
            wait_for_step(page, timeline, step)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= width, name
            page.screenshot(path=str(ARTIFACTS / f"{name}-{which}-{width}.png"), full_page=True)
            assert not watched.errors and not watched.foreign, (name, watched.errors)
            page.close()


def test_a_step_a_tick_a_mode_or_an_engine_sends_no_message_either_way(
    watched: Watched, server: str
) -> None:
    """The position lives in the browser alone: stepping through every mode on both
    engines, playing, and switching engines sends nothing to Python and hears nothing
    back (every websocket frame counted); a scenario picked is a request, and is seen."""
    frames: list[str] = []

    def on_socket(ws: Any) -> None:
        ws.on("framesent", lambda _payload: frames.append("page -> Python"))
        ws.on("framereceived", lambda _payload: frames.append("Python -> page"))

    watched.page.on("websocket", on_socket)
    page = open_app(watched, server, "?scenario=shared-prefix")
    page.wait_for_timeout(1_000)  # the page's own start-up messages
    frames.clear()
    counter = page.get_by_test_id("step-counter")
    for engine, modes in (("vLLM", timelines.scenario("shared-prefix").modes), ("SGLang", ())):
        if engine == "SGLang":
            page.get_by_role("radio", name="SGLang").check()
            modes = timelines.scenario("shared-prefix").sglang.modes
        for mode in modes:
            if len(modes) > 1:  # (one mode: the picker hides)
                page.get_by_role("radio", name=mode).check()
            last = len(timelines.timeline("shared-prefix", mode).steps) - 1
            page.get_by_role("button", name="Restart").click()
            for step in range(1, last + 1):
                page.keyboard.press("ArrowRight")
                expect(counter).to_have_attribute("data-step", str(step))
    page.get_by_label("Speed").select_option(label="4 steps/s")
    page.get_by_role("button", name="Restart").click()
    page.get_by_role("button", name="Play").click()  # ticks to the end, and stops there
    expect(counter).to_have_attribute("data-step", str(last), timeout=15_000)
    expect(page.get_by_role("button", name="Play")).to_be_visible()
    page.wait_for_timeout(500)
    assert frames == []
    page.get_by_label("Scenario").select_option("reset")  # a request: the check can fail
    expect(page.get_by_test_id("step-counter")).to_have_text(re.compile(r"^Step 0 / "))
    assert "page -> Python" in frames and "Python -> page" in frames
    page.wait_for_timeout(1_000)
    frames.clear()
    for mode in timelines.scenario("reset").modes:  # vLLM's three modes
        page.get_by_role("radio", name=mode).check()
        page.keyboard.press("End")
        last = len(timelines.timeline("reset", mode).steps) - 1
        expect(counter).to_have_attribute("data-step", str(last))
        page.keyboard.press("Home")
        expect(counter).to_have_attribute("data-step", "0")
    page.wait_for_timeout(500)
    assert frames == []
