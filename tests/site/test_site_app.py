"""The simulator itself on the offline static site, checked against the engine in CPython.

Every page is opened in one shared browser context (its HTTP cache makes each load
after the first a warm one) and must make no request outside 127.0.0.1 and log no
console error; each load's status messages go to test-artifacts/. The tests that need
no address of their own share one page (`module_page`) and move it as a learner
would, with the scenario picker and the mode buttons: a load starts Pyodide again.
The page checks are the panel-serve tests' own (tests/app/test_browser_serve.py), so
both ways of running the app are held to the same assertions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest

from engine.lab.play.scenario import load_scenario, scenario_names
from engine.lab.play.vllm.timeline import Timeline, build_timeline
from tests.app.page_checks import check_step, exercise_keyboard, expected, read_page, wait_for_step
from tests.site.conftest import PageRun, kept_page

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.site, pytest.mark.browser]

FLAGSHIP = "reset"
MODES = load_scenario(FLAGSHIP).modes
# A Pyodide step is a round trip through the worker: give it more than the 5 s default
# (the machine may be shared), but never an unbounded wait.
EXPECT_TIMEOUT_MS = 15_000
WORKER_TIMEOUT_MS = 60_000

# Runs in the Pyodide worker: the engine (from the project wheel the page installed)
# builds the timelines again and returns their digests. Bounded by its own timeout.
DIGESTS_IN_WORKER = """async ([names, timeoutMs]) => {
  const code = `
import json
from engine.lab.play.scenario import load_scenario
from engine.lab.play.vllm.timeline import build_timeline
json.dumps({f"{n}/{m}": build_timeline(load_scenario(n), m).digest()
            for n in ${JSON.stringify(names)} for m in load_scenario(n).modes})
`;
  const timeout = new Promise((_, reject) =>
    setTimeout(() => reject(new Error(`no digest after ${timeoutMs} ms`)), timeoutMs));
  return await Promise.race([self.pyodide.runPythonAsync(code), timeout]);
}"""


@cache
def timeline(name: str, mode: str) -> Timeline:
    return build_timeline(load_scenario(name), mode)


# The module's shared page opens at this deep link (the flagship's keep mode, step 5):
# the first test checks it there, before any test moves the page.
DEEP_LINK = "?mode=keep&step=5"
MOVED: list[str] = []  # the tests that moved the shared page, in order


@pytest.fixture(scope="module")
def module_page(shared_context: Any, site_url: str) -> Iterator[tuple[Any, PageRun]]:
    """One interactive page for the module's tests, which move it in the app (a page load
    starts Pyodide: about 10 s of both cores). It opens at DEEP_LINK and must stay clean
    throughout."""
    with kept_page(shared_context, site_url, DEEP_LINK) as opened:
        yield opened


@pytest.fixture(scope="module", autouse=True)
def patient_expect() -> Iterator[None]:
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    yield
    expect.set_options(timeout=5_000)  # Playwright's default, for the other modules


def last_step(tl: Timeline) -> int:
    return len(tl.steps) - 1


def step_forward_to_end(page: Any, tl: Timeline, check_each: bool) -> None:
    """Click "Step forward" once per step, waiting for each step to render."""
    forward = page.get_by_role("button", name="Step forward")
    for step in range(1, len(tl.steps)):
        forward.click()
        if check_each:
            check_step(page, tl, step)
        else:
            wait_for_step(page, tl, step)
    expect(forward).to_be_disabled()


def step_back_and_scrub(page: Any, tl: Timeline) -> None:
    page.get_by_role("button", name="Step back").click()
    check_step(page, tl, last_step(tl) - 1)
    page.get_by_role("button", name="Restart").click()
    check_step(page, tl, 0)
    expect(page.get_by_role("button", name="Step back")).to_be_disabled()
    # Click along the slider's track; whatever step it lands on must match the engine.
    box = page.get_by_role("slider", name="Step").bounding_box()
    assert box is not None, "no step slider"
    page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)
    counter = page.get_by_test_id("step-counter")
    expect(counter).not_to_have_text(f"Step 0 / {last_step(tl)}")
    step = int(counter.get_attribute("data-step") or -1)
    assert 0 < step < len(tl.steps), step
    check_step(page, tl, step)


def browser_digests(page: Any, names: list[str]) -> dict[str, str]:
    worker = next((w for w in page.workers if w.url.endswith(".js")), None)
    assert worker is not None, f"no Pyodide worker among {page.workers}"
    return dict(json.loads(worker.evaluate(DIGESTS_IN_WORKER, [names, WORKER_TIMEOUT_MS])))


def open_in_page(page: Any, name: str, mode: str) -> Timeline:
    """Open scenario ``name`` in ``mode`` at its first step, with the page's own controls."""
    MOVED.append(f"{name}/{mode}")
    tl = timeline(name, mode)
    page.get_by_label("Scenario").select_option(name)
    expect(page.get_by_label("Scenario")).to_have_value(name)
    radio = page.get_by_role("radio", name=mode)
    # A scenario of one mode has no mode buttons; the page may still show the previous
    # scenario's for a moment, so the scenario says, not the page.
    if len(load_scenario(name).modes) > 1:
        radio.check()
        expect(radio).to_be_checked()
    restart = page.get_by_role("button", name="Restart")
    if restart.is_enabled():
        restart.click()
    wait_for_step(page, tl, 0)
    return tl


def test_a_deep_link_opens_that_state(module_page: tuple[Any, Any]) -> None:
    """The shared page, as it opened at DEEP_LINK (this test runs first: none moved it)."""
    assert not MOVED, f"the shared page moved before its deep link was checked: {MOVED}"
    page, _ = module_page
    check_step(page, timeline(FLAGSHIP, "keep"), 5)
    expect(page.get_by_test_id("notice")).to_have_count(0)


def test_a_deep_link_to_another_scenario_opens_it(site_page: Any) -> None:
    page, _ = site_page("?scenario=exact-duplicate")
    check_step(page, timeline("exact-duplicate", load_scenario("exact-duplicate").modes[0]), 0)
    expect(page.get_by_test_id("notice")).to_have_count(0)


@pytest.mark.parametrize("mode", MODES)
def test_every_step_of_the_flagship_matches_the_engine(
    module_page: tuple[Any, Any], mode: str
) -> None:
    page, _ = module_page
    tl = open_in_page(page, FLAGSHIP, mode)
    check_step(page, tl, 0)
    step_forward_to_end(page, tl, check_each=True)
    # The other interactions ride on the modes' walks.
    if mode == "preempt":
        step_back_and_scrub(page, tl)
    if mode == "keep":
        exercise_keyboard(page, tl)


def test_timelines_computed_in_the_browser_equal_cpython(module_page: tuple[Any, Any]) -> None:
    page, _ = module_page
    names = list(scenario_names())
    cpython = {f"{n}/{m}": timeline(n, m).digest() for n in names for m in load_scenario(n).modes}
    assert browser_digests(page, names) == cpython


# (A bad deep link's notice: tests/site/test_early_steps.py, on its held page's live load.)


def test_embed_mode(site_page: Any) -> None:
    page, _ = site_page("?embed=1&mode=keep&step=1", viewport=(800, 700))
    check_step(page, timeline(FLAGSHIP, "keep"), 1)
    expect(page.get_by_test_id("app-header")).to_have_count(0)
    expect(page.get_by_test_id("embed-title")).to_be_visible()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 800


@pytest.mark.parametrize("name", list(scenario_names()))
def test_every_scenario_steps_to_its_end(module_page: tuple[Any, Any], name: str) -> None:
    page, _ = module_page
    tl = open_in_page(page, name, load_scenario(name).modes[0])
    step_forward_to_end(page, tl, check_each=False)
    shown, want = read_page(page), expected(tl, last_step(tl))
    assert {k: shown[k] for k in ("blocks", "queue", "map")} == {
        k: want[k] for k in ("blocks", "queue", "map")
    }


def test_the_hashing_cost_is_measured_in_the_browsers_python(
    module_page: tuple[Any, Any],
) -> None:
    page, _ = module_page
    page.get_by_role("button", name="Measure the hashing cost here").click()
    measured = page.get_by_test_id("hash-cost")
    expect(measured).to_contain_text("measured in your browser's Python (Pyodide)")
    assert float(measured.locator('tr[data-name="sha256"]').get_attribute("data-us") or 0) > 0
