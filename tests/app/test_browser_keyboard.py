"""The keyboard on `panel serve`: no arrow key opens another scenario or engine, and every
control the Tab key reaches shows a 2 px focus ring.

An arrow on the focused scenario picker opened the next scenario (on the static site a
reload with Python starting again), one on the engine picker switched engines; Panel's
own buttons (Edit a copy, Measure, Export) had a 1 px light-grey dotted ring.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.data import timelines
from tests.app.browser import chromium, panel_serve
from tests.app.test_browser_serve import Watched

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

# The focused element, through the shadow roots, and its ring.
FOCUSED_JS = """() => {
  let el = document.activeElement
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement
  if (!el || el === document.body) return null
  const style = getComputedStyle(el)
  const label = (el.getAttribute('aria-label') || el.innerText || el.value || el.title || '')
  const kind = el.tagName.toLowerCase() + (el.type ? `[${el.type}]` : '')
  return {
    what: `${kind} "${label.trim().slice(0, 40)}"`,
    style: style.outlineStyle,
    width: parseFloat(style.outlineWidth),
  }
}"""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with panel_serve() as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with (
        playwright_api.sync_playwright() as playwright,
        chromium(playwright, viewport={"width": 1280, "height": 800}) as context,
    ):
        yield context


@pytest.fixture
def watched(browser: Any, server: str) -> Iterator[Watched]:
    seen = Watched(browser.new_page(), server.rsplit("/", 1)[0])
    yield seen
    seen.page.close()
    assert not seen.errors, f"console errors and warnings: {seen.errors}"


def open_page(watched: Watched, server: str, query: str) -> Any:
    page = watched.page
    page.goto(f"{server}{query}")
    expect(page.get_by_test_id("step-counter")).to_be_visible(timeout=60_000)
    return page


def test_arrows_browse_the_scenario_picker_and_enter_opens_one(
    watched: Watched, server: str
) -> None:
    page = open_page(watched, server, "?scenario=shared-prefix")
    picker = page.locator(".scenario-picker select")
    picker.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    shown = picker.input_value()
    assert shown != "shared-prefix"  # the picker shows another one...
    page.wait_for_timeout(1_500)
    assert "scenario=shared-prefix" in page.url  # ...and nothing opened it
    expect(page.get_by_test_id("step-counter")).to_have_text(
        f"Step 0 / {timelines.last_step('shared-prefix', 'default')}"
    )
    page.keyboard.press("Enter")
    page.wait_for_url(f"**scenario={shown}**", timeout=30_000)
    expect(picker).to_have_value(shown)


def test_leaving_the_scenario_picker_puts_the_open_scenario_back(
    watched: Watched, server: str
) -> None:
    page = open_page(watched, server, "?scenario=shared-prefix")
    picker = page.locator(".scenario-picker select")
    picker.focus()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Tab")
    expect(picker).to_have_value("shared-prefix")
    picker.select_option("cache-salt")  # a pick in the list opens at once
    page.wait_for_url("**scenario=cache-salt**", timeout=30_000)


def test_arrows_on_the_engine_picker_move_the_focus_and_enter_switches(
    watched: Watched, server: str
) -> None:
    page = open_page(watched, server, "?scenario=shared-prefix&step=2")
    engines = page.get_by_test_id("engine-picker").locator("input[type=radio]")
    vllm, sglang = engines.nth(0), engines.nth(1)
    vllm.focus()
    for key in ("ArrowRight", "ArrowDown"):
        page.keyboard.press(key)
        page.wait_for_timeout(500)
        expect(vllm).to_be_checked()
    assert "fcfs" not in page.url
    sglang.focus()
    page.keyboard.press("Enter")
    expect(sglang).to_be_checked()
    page.wait_for_url("**mode=fcfs**", timeout=30_000)
    assert "step=2" in page.url  # the same step, on SGLang


@pytest.mark.parametrize(
    "query", ["?scenario=reset", "?scenario=playground"], ids=["scenario", "playground"]
)
def test_every_control_tab_reaches_has_a_2px_ring(
    watched: Watched, server: str, query: str
) -> None:
    page = open_page(watched, server, query)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.mouse.click(2, 2)  # the page, not a control, has the focus
    seen: dict[str, dict[str, Any]] = {}
    for _ in range(120):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED_JS)
        if focused is None or focused["what"] in seen:
            if focused is not None and len(seen) > 5:
                break  # round the page once
            continue
        seen[focused["what"]] = focused
    assert len(seen) > 10, list(seen)
    faint = {
        what: f"{ring['style']} {ring['width']}px"
        for what, ring in seen.items()
        if ring["style"] in ("none", "auto") or ring["width"] < 2
    }
    assert not faint, f"{len(faint)} of {len(seen)} controls with a faint focus ring: {faint}"
