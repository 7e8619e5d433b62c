"""Before Python is ready, the static site's early page already steps.

The server holds back Panel's wheel, so the page stays in its pre-Python phase
for as long as a test needs: the step controls and shortcuts must work there and
show what the engine computed, every other control must stay put, and the live
page must take over at the step the learner reached.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app.data import url
from app.render.prefill import step_request
from app.static_site.pins import PANEL_VERSION
from engine.lab.play.scenario import load_scenario
from engine.lab.play.sglang.timeline import build_sglang_timeline
from engine.lab.play.vllm.timeline import build_timeline
from tests.app.page_checks import check_sglang_step, check_step
from tests.site.conftest import (
    HeldOrigin,
    PageRun,
    assert_clean,
    record,
    wait_interactive,
)

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.site, pytest.mark.browser]

HELD = f"panel-{PANEL_VERSION}-py3-none-any.whl"  # the worker installs it
FLAGSHIP = "reset"
EARLY_TIMEOUT_MS = 60_000
# How long the live page may take to take over from the early one (a loaded machine).
HANDOVER_TIMEOUT_MS = 30_000


@pytest.fixture
def held_page(
    shared_context: Any, held_origin: HeldOrigin
) -> Iterator[Callable[..., tuple[Any, PageRun, Any]]]:
    """held_page(query, missing="", early=True) -> (page, run, release): opened with
    Panel's wheel held back (and the paths under `missing` answered 404); with `early`,
    once its early page shows (else once the page has loaded: nothing shows before
    Python). A new page of the module's context (its HTTP cache warm: shared_context;
    its localStorage cleared after each test), on the module's server (held_origin)."""
    opened: list[tuple[Any, PageRun, Callable[[], None]]] = []

    def _open(query: str = "", missing: str = "", early: bool = True) -> tuple[Any, PageRun, Any]:
        url, release = held_origin.hold(HELD, missing)
        page = shared_context.new_page()
        run = PageRun(origin=url)
        opened.append((page, run, record(page, run)))
        page.goto(f"{url}/{query}", wait_until="commit", timeout=30_000)
        if not early:
            page.wait_for_load_state("load", timeout=EARLY_TIMEOUT_MS)
            return page, run, release
        # The early page of the address: a scenario's, or the start page.
        shown = page.locator('[data-testid="step-counter"], [data-testid="start-page"]')
        expect(shown.first).to_be_visible(timeout=EARLY_TIMEOUT_MS)
        return page, run, release

    yield _open
    for page, _, detach in opened:
        detach()
        # The next test's page starts as a first visit's would (a context of its own did).
        with contextlib.suppress(playwright_api.Error):
            page.evaluate("() => localStorage.clear()")
        page.close()
    held_origin.free()
    for _, run, _ in opened:
        assert_clean(run)


def step_then_go_live(page: Any, run: PageRun, release: Any, timeline: Any, step: int) -> None:
    """Step forward before Python, let Python start: the live page keeps the step."""
    page.get_by_role("button", name="Step forward").click()
    check_step(page, timeline, step + 1)
    release.set()
    wait_interactive(page, run)
    check_step(page, timeline, step + 1)


def python_live(page: Any) -> bool:
    return not page.evaluate("() => document.body.classList.contains('pn-loading')")


# The live stepping page's `document_json`, as Bokeh holds it (what Python sent last).
LIVE_DOCUMENT_JS = """() => {
  for (const model of window.Bokeh.documents[0].all_models) {
    if (model.data && typeof model.data.document_json === 'string') {
      return JSON.parse(model.data.document_json)
    }
  }
  return null
}"""


def test_steps_work_before_python_and_the_live_page_keeps_the_step(held_page: Any) -> None:
    tl = build_timeline(load_scenario(FLAGSHIP), "default")
    page, run, release = held_page(f"?scenario={FLAGSHIP}")  # (no scenario: the start page)
    expect(page.locator("body.pcl-early")).to_have_count(1)
    note = page.get_by_test_id("early-note")
    # the held wheel's stage (the runtime before it takes seconds on a busy 2-core machine)
    expect(note).to_contain_text("Installing packages (2/3)", timeout=EARLY_TIMEOUT_MS)
    expect(note).to_contain_text("Steps, modes and scenarios work now")
    assert not python_live(page)

    page.get_by_role("button", name="Step forward").click()
    check_step(page, tl, 1)
    page.keyboard.press("ArrowRight")
    check_step(page, tl, 2)

    # Modes work too: every mode of the scenario is in the copy.
    keep = build_timeline(load_scenario(FLAGSHIP), "keep")
    page.get_by_role("radio", name="keep").click()
    expect(page.get_by_role("radio", name="keep")).to_be_checked()
    check_step(page, keep, 2)  # a mode switch keeps the step
    page.get_by_role("button", name="Step forward").click()
    check_step(page, keep, 3)
    # Controls that need Python stay as they were, and nothing breaks.
    page.get_by_label("Scenario").click(force=True)
    page.get_by_label("Request", exact=True).click(force=True)
    expect(page.get_by_label("Scenario")).to_have_value(FLAGSHIP)
    check_step(page, keep, 3)
    # Plain HTML works: the list of scenarios opens.
    page.get_by_text("All scenarios", exact=True).click()
    expect(page.locator("details.scenarios[open]")).to_have_count(1)
    # The page scrolls (Panel's veil would have pinned it).
    page.mouse.wheel(0, 500)
    page.wait_for_function("() => window.scrollY > 0")
    assert not python_live(page)

    # A request only Python answers (the prefill calculator's example) waits, the note
    # says so, and Python answers it once it is there.
    page.get_by_role("button", name="Agent-prompt example (2,200 / 2,000)").click()
    expect(page.get_by_label("prompt tokens")).to_have_value("2200")
    expect(note).to_contain_text("Asked: the answer comes once Python has started")
    example = page.get_by_text("The agent-prompt example: Llama-3-8B")
    expect(example).to_have_count(0)
    measure = page.get_by_role("button", name="Measure the hashing cost here")
    measure.click()
    expect(measure).to_be_disabled()  # (measuring, as on the live page)
    check_step(page, keep, 3)

    # Playing slowly when Python arrives: the live page takes this very page over (the
    # same element: no second page, no handover), playing on at that speed (from step 0,
    # 0.5 steps/s leaves Python 18 s to start before Play ends by itself).
    counter = page.get_by_test_id("step-counter")
    counter.evaluate("(el) => { el.dataset.drawn = 'before Python' }")
    page.get_by_label("Speed").select_option(label="0.5 steps/s")
    page.get_by_role("button", name="Restart").click()
    page.get_by_role("button", name="Play").click()
    release.set()
    wait_interactive(page, run)
    expect(page.locator("body.pcl-early")).to_have_count(0, timeout=HANDOVER_TIMEOUT_MS)
    expect(note).to_have_count(0, timeout=HANDOVER_TIMEOUT_MS)
    expect(counter).to_have_attribute("data-drawn", "before Python")
    # Python sent only the document's head: the page keeps the builder's (all of it).
    sent = page.evaluate(LIVE_DOCUMENT_JS)
    assert sent["prebuilt"] is True and sent["scenario"][0] == FLAGSHIP and "views" not in sent
    # the requests made before Python, answered
    expect(example).to_be_visible()
    expect(page.get_by_text("in your browser's Python (Pyodide)")).to_be_visible(timeout=30_000)
    expect(measure).to_be_enabled()
    expect(page.get_by_label("Speed")).to_have_value("0.5")
    # (Python may be live before the first tick: the live page then takes the next.)
    expect(counter).not_to_have_attribute("data-step", "0")
    if page.get_by_role("button", name="Pause").count() == 0:  # Play ended: a slow start
        page.get_by_role("button", name="Restart").click()
        page.get_by_role("button", name="Play").click()
        expect(counter).not_to_have_attribute("data-step", "0")
    page.get_by_role("button", name="Pause").click()
    step = int(page.get_by_test_id("step-counter").get_attribute("data-step") or -1)
    assert 0 < step < len(keep.steps) - 1, step
    expect(page.get_by_role("radio", name="keep")).to_be_checked()
    check_step(page, keep, step)
    page.wait_for_url(f"**mode=keep&step={step}**")  # the address follows
    page.get_by_role("button", name="Step forward").click()
    check_step(page, keep, step + 1)
    page.get_by_role("radio", name="preempt").click()
    check_step(page, build_timeline(load_scenario(FLAGSHIP), "preempt"), step + 1)
    page.wait_for_url(f"**mode=preempt&step={step + 1}**")
    assert run.early_ms is not None and run.early_ms < run.interactive_ms


def test_a_deep_link_into_the_copy_opens_there_before_python(held_page: Any) -> None:
    keep = build_timeline(load_scenario(FLAGSHIP), "keep")
    page, run, release = held_page("?mode=keep&step=3")
    expect(page.locator("body.pcl-early")).to_have_count(1)
    expect(page.get_by_role("radio", name="keep")).to_be_checked()
    check_step(page, keep, 3)
    step_then_go_live(page, run, release, keep, 3)
    expect(page.get_by_test_id("notice")).to_have_count(0)
    page.wait_for_url("**mode=keep&step=4**")


def test_a_shared_link_with_parameters_the_app_ignores_opens_early(held_page: Any) -> None:
    """A link shared with a tracker's parameters: the live page ignores them (no notice), so
    the early page opens at its position too, and they stay in the address."""
    keep = build_timeline(load_scenario(FLAGSHIP), "keep")
    page, run, release = held_page(
        f"?scenario={FLAGSHIP}&mode=keep&step=3&utm_source=x&fbclid=y", early=False
    )
    expect(page.locator("body.pcl-early")).to_have_count(1, timeout=EARLY_TIMEOUT_MS)
    expect(page.get_by_role("radio", name="keep")).to_be_checked()
    check_step(page, keep, 3)
    assert not python_live(page)
    step_then_go_live(page, run, release, keep, 3)
    expect(page.get_by_test_id("notice")).to_have_count(0)
    page.wait_for_url("**mode=keep&step=4&utm_source=x&fbclid=y")


def test_an_embed_link_steps_before_python_in_the_compact_layout(held_page: Any) -> None:
    """The write-up's iframe: its own early page, fetched for `embed=1` addresses."""
    keep = build_timeline(load_scenario(FLAGSHIP), "keep")
    page, run, release = held_page("?scenario=reset&mode=keep&step=1&embed=1")
    expect(page.locator("body.pcl-early")).to_have_count(1)
    expect(page.get_by_test_id("embed-title")).to_be_visible()
    expect(page.get_by_test_id("app-header")).to_have_count(0)
    check_step(page, keep, 1)
    page.get_by_role("radio", name="preempt").click()
    preempt = build_timeline(load_scenario(FLAGSHIP), "preempt")
    check_step(page, preempt, 1)  # a mode switch keeps the step
    page.get_by_role("button", name="Step forward").click()
    check_step(page, preempt, 2)
    page.get_by_role("tab", name="Code").click()  # a tab chosen before Python
    release.set()
    wait_interactive(page, run)
    expect(page.get_by_test_id("embed-title")).to_be_visible()
    # The live page opens on the tab the learner chose on the copy, at their step.
    expect(page.get_by_role("tab", name="Code")).to_have_attribute("aria-selected", "true")
    page.get_by_role("tab", name="The cache").click()
    check_step(page, preempt, 2)
    page.wait_for_url("**mode=preempt&step=2&embed=1**")


@pytest.mark.parametrize("embed", [False, True])
def test_every_scenario_has_its_copy_and_the_picker_opens_it(held_page: Any, embed: bool) -> None:
    """Another scenario's address opens its own early page; picking a scenario
    before Python opens that scenario's page, which steps at once too."""
    layout = "&embed=1" if embed else ""
    salt = build_timeline(load_scenario("cache-salt"), "default")
    page, run, release = held_page(f"?scenario=cache-salt&step=2{layout}")
    expect(page.locator("body.pcl-early")).to_have_count(1)
    check_step(page, salt, 2)
    page.get_by_role("button", name="Step forward").click()
    check_step(page, salt, 3)
    # The prefill calculator follows the step too (the step's latest admitted request).
    request = step_request(salt.steps[3].snapshot)
    assert request is not None
    source = page.get_by_test_id("prefill-cost").locator("xpath=..").locator(".src")
    expect(source).to_contain_text(f"From request {request.request_id}")
    page.get_by_label("Scenario").select_option("eviction-order")
    page.wait_for_url(f"**?scenario=eviction-order{layout}")
    expect(page.locator("body.pcl-early")).to_have_count(1)
    # The first page's downloads, cut off by leaving it, are not failures of the site.
    run.failed[:] = [f for f in run.failed if not f.endswith("(net::ERR_ABORTED)")]
    expect(page.get_by_test_id("embed-title" if embed else "app-header")).to_be_visible()
    eviction = build_timeline(load_scenario("eviction-order"), "default")
    check_step(page, eviction, 0)
    step_then_go_live(page, run, release, eviction, 0)
    page.get_by_label("Scenario").select_option("cache-salt")  # with Python: in place
    check_step(page, salt, 0)
    page.wait_for_url("**scenario=cache-salt**")
    page.go_back()  # the scenario the learner left, where they left it
    check_step(page, eviction, 1)


@pytest.mark.parametrize(
    "query", ["?mode=keep&step=99", "?mode=it%27s", "?scenario=nope&step=abc&embed=1"]
)
def test_an_address_with_a_bad_value_opens_early_with_the_live_pages_notice(
    held_page: Any, query: str
) -> None:
    """A value parse_link corrects: the early page opens where Python would, saying what
    the live page says of it; the live page keeps that notice, once."""
    link = url.parse_link(query)
    assert link.notices
    timeline = build_timeline(load_scenario(link.scenario), link.mode)
    page, run, release = held_page(query)
    expect(page.locator("body.pcl-early")).to_have_count(1)
    notice = page.get_by_test_id("notice")
    expect(notice).to_be_visible()
    assert notice.locator("li").all_inner_texts() == list(link.notices)
    assert not python_live(page)
    check_step(page, timeline, 0)
    step_then_go_live(page, run, release, timeline, 0)
    expect(notice).to_have_count(1)
    assert notice.locator("li").all_inner_texts() == list(link.notices)
    if link.embed:
        expect(page.get_by_test_id("embed-title")).to_be_visible()


@pytest.mark.parametrize("query", ["?embed=true", "?mode=" + "x" * 81])
def test_an_address_the_copy_cannot_say_waits_for_python(held_page: Any, query: str) -> None:
    """Another spelling of the layout, or a value Python quotes cut short: Python shows it
    (the live load of a bad deep link, the static site's check of its notice)."""
    page, run, release = held_page(query, early=False)
    page.wait_for_timeout(300)
    expect(page.locator("body.pcl-early")).to_have_count(0)
    expect(page.locator("body.pn-loading")).to_have_count(1)
    release.set()
    wait_interactive(page, run)
    if "embed" in query:
        expect(page.get_by_test_id("embed-title")).to_be_visible()
    else:
        expect(page.get_by_test_id("notice")).to_contain_text("(81 characters)")
    check_step(page, build_timeline(load_scenario(FLAGSHIP), "default"), 0)


def test_an_early_page_the_host_lost_leaves_the_page_to_python(held_page: Any) -> None:
    """An early page the host lost: nothing shows before Python, which opens the address."""
    page, run, release = held_page(
        "?scenario=eviction-order&step=2", missing="/early/", early=False
    )
    page.wait_for_timeout(300)
    expect(page.locator("body.pcl-early")).to_have_count(0)
    release.set()
    wait_interactive(page, run)
    check_step(page, build_timeline(load_scenario("eviction-order"), "default"), 2)
    expect(page.get_by_test_id("notice")).to_have_count(0)
    # Python's first document was a head for the early page it thought there; the page
    # asked for the whole one.
    assert "views" in page.evaluate(LIVE_DOCUMENT_JS)
    lost = [r["url"] for r in run.requests if r["status"] == 404]
    assert lost and all("/early/eviction-order" in url for url in lost)
    # The host's 404, as asked, and the browser's own console line about it.
    run.requests[:] = [r for r in run.requests if r["status"] != 404]
    assert [e for e in run.errors if "404" in e], run.errors
    run.errors[:] = [e for e in run.errors if "404 (Not Found)" not in e]


def test_the_lab_address_shows_the_labs_loading_page_while_python_starts(
    held_page: Any,
) -> None:
    """`?lab=` has no copy of its own: the lab's loading page covers the start page's
    copy, and the status line says the lab needs Python (not the copy's "steps work
    now")."""
    page, run, release = held_page("?lab=small-pool")
    note = page.get_by_test_id("early-note")
    expect(note).to_contain_text("Installing packages (2/3)", timeout=EARLY_TIMEOUT_MS)
    expect(note).to_contain_text("Opening the workload lab: it runs the engine in Python")
    expect(page.locator("body.pcl-lab-wait")).to_have_count(1)
    expect(page.locator("body.pcl-start")).to_have_count(0)
    loading = page.get_by_test_id("lab-loading")
    expect(loading).to_contain_text("Workload lab")
    expect(loading).to_contain_text("Loading the workload lab…")
    # What the learner sees is the lab's loading page, not the start page under it.
    assert page.evaluate(
        "() => !!document.elementFromPoint(100, innerHeight / 4).closest('.pcl-lab-loading')"
    )
    assert not python_live(page)

    release.set()
    wait_interactive(page, run)
    expect(note).to_have_count(0, timeout=HANDOVER_TIMEOUT_MS)
    expect(loading).to_have_count(0, timeout=HANDOVER_TIMEOUT_MS)
    expect(page.locator("body.pcl-lab-wait")).to_have_count(0)
    expect(page.get_by_test_id("lab-hint")).to_be_visible(timeout=EARLY_TIMEOUT_MS)


def test_sglang_steps_before_python_and_the_live_page_keeps_it(held_page: Any) -> None:
    """A scenario on both engines: its copy holds SGLang's timelines too, so the engine
    picker works before Python, and the live page opens on SGLang at that step."""
    scenario = load_scenario("shared-prefix")
    fcfs = build_sglang_timeline(scenario, "fcfs")
    page, run, release = held_page("?scenario=shared-prefix&step=2")
    expect(page.locator("body.pcl-early")).to_have_count(1)
    page.get_by_role("radio", name="SGLang").click()
    check_sglang_step(page, fcfs, 2)  # the step kept
    page.get_by_role("button", name="Step forward").click()
    check_sglang_step(page, fcfs, 3)
    release.set()
    wait_interactive(page, run)
    expect(page.get_by_role("radio", name="SGLang")).to_be_checked()
    check_sglang_step(page, fcfs, 3)
    page.wait_for_function(
        "() => { const q = new URLSearchParams(location.search);"
        " return q.get('mode') === 'fcfs' && q.get('step') === '3' }"
    )


# What a learner's eye follows across the handover: the controls and the first views.
LANDMARKS_JS = """() => {
  const deepAll = (root, selector, out = []) => {
    out.push(...root.querySelectorAll(selector))
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
    }
    return out
  }
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.x, r.y] }
  // The words' font: the early page once drew the header at 12 px (the live page's 14 px).
  const font = (el) => {
    const style = getComputedStyle(el)
    return [style.fontSize, style.lineHeight, style.fontFamily].join(' ')
  }
  const first = (selector, test = () => true) => {
    const found = deepAll(document, selector).find((el) => test(el) &&
      el.getBoundingClientRect().width > 0)
    return found ? box(found) : null
  }
  return {
    scenario: first('select', (el) => el.closest('label') &&
      el.closest('label').textContent.startsWith('Scenario')),
    engine: first('input[type=radio]', (el) => el.value === 'sglang'),
    forward: first('button', (el) => el.textContent === 'Step forward'),
    fork: first('button', (el) => el.textContent === 'Edit a copy'),  // a widget's stand-in
    counter: first('[data-testid="step-counter"]'),
    narration: first('[data-testid="narration"]'),
    // Widgets' stand-ins, as wide and high as Bokeh draws them: [width, height]
    sizes: ['Edit a copy', 'Measure the hashing cost here'].map((text) => {
      const found = deepAll(document, 'button').find((el) => el.textContent === text)
      const r = found ? found.getBoundingClientRect() : null
      return r && r.width > 0 ? [r.width, r.height] : null
    }),
    fonts: ['[data-testid="narration"]', '.header p', '.player .btn', '.counter', 'h3', 'td']
      .map((selector) => deepAll(document, selector).find((el) =>
        el.getBoundingClientRect().width > 0)).filter((el) => el).map(font),
  }
}"""


# Each visible tab's label, and whether a click on it shows a panel with something in it.
TABS_JS = """() => {
  const all = (root, out = []) => {
    out.push(...root.querySelectorAll('[role=tablist]'))
    for (const el of root.querySelectorAll('*')) { if (el.shadowRoot) { all(el.shadowRoot, out) } }
    return out
  }
  const shown = []
  for (const list of all(document)) {
    const tabs = [...list.querySelectorAll('[role=tab]')].filter((tab) => !tab.hidden)
    for (const tab of tabs) {
      tab.click()
      const panel = [...list.parentNode.querySelectorAll('[role=tabpanel]')].find((p) => !p.hidden)
      shown.push([tab.textContent, !!panel && panel.getBoundingClientRect().height > 20])
    }
    if (tabs.length) { tabs[0].click() }
  }
  return shown
}"""


@pytest.mark.parametrize(
    ("query", "width", "height"),
    [
        ("?scenario=shared-prefix&step=3", 1280, 800),
        ("?scenario=shared-prefix&embed=1", 800, 900),
        ("?scenario=keep-offload-fixed&step=2&embed=1", 800, 900),  # with CPU offload's tab
    ],
)
def test_the_live_page_opens_where_the_early_page_drew_everything(
    held_page: Any, query: str, width: int, height: int
) -> None:
    """No jump at the handover: the early page lays the app's own layout out, so the
    controls and the views stand where the live page puts them (within a few pixels)."""
    page, run, release = held_page(query)
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_timeout(200)
    early, early_tabs = page.evaluate(LANDMARKS_JS), page.evaluate(TABS_JS)
    release.set()
    wait_interactive(page, run)
    page.wait_for_timeout(300)
    live = page.evaluate(LANDMARKS_JS)
    early_sizes, live_sizes = early.pop("sizes"), live.pop("sizes")
    for early_size, live_size in zip(early_sizes, live_sizes, strict=True):
        assert (early_size is None) == (live_size is None), (early_sizes, live_sizes)
        if early_size is not None:  # (the embed has neither)
            assert all(abs(a - b) <= 16 for a, b in zip(early_size, live_size, strict=True)), (
                early_sizes,
                live_sizes,
            )
    early_fonts, live_fonts = early.pop("fonts"), live.pop("fonts")
    assert len(early_fonts) == 6 and early_fonts == live_fonts, (early_fonts, live_fonts)
    # (a scenario not on SGLang has no engine picker)
    found = {name for name, where in early.items() if where}
    assert found == {name for name, where in live.items() if where}, (early, live)
    assert {"scenario", "forward", "counter", "narration"} <= found
    # The same tabs (one once showed a tab the live page hides, and its panel was another's).
    live_tabs = page.evaluate(TABS_JS)
    assert early_tabs == live_tabs, (early_tabs, live_tabs)
    for name in found:
        (x, y) = early[name]
        dx, dy = abs(x - live[name][0]), abs(y - live[name][1])
        assert dx <= 16 and dy <= 16, (name, early[name], live[name])
