"""The built site runs offline in Chromium: nothing leaves 127.0.0.1, no console error,
the loading stages show, the app becomes interactive and a click reaches Python."""

from __future__ import annotations

import re
from typing import Any

import pytest

from app.static_site.patches import shim
from tests.app.page_checks import PHONE, check_reads_on_a_phone
from tests.site.conftest import assert_clean

pytestmark = [pytest.mark.site, pytest.mark.browser]

CLICK_TIMEOUT_MS = 20_000
# The button to click: the simulator's "Step forward", else the page's first button.
CLICK_NAMES = ("Step forward",)
# An address whose query string the app must see as it is (the warm load's).
QUERY = "?mode=keep&step=5"
# Text of the whole page, shadow roots included (Panel renders into shadow DOM).
PAGE_TEXT_JS = """() => {
  const skip = new Set(['STYLE', 'SCRIPT', 'LINK']);
  const walk = (root) => [...root.childNodes].map((n) => n.nodeType === 3 ? n.textContent
    : skip.has(n.nodeName) ? '' : walk(n.shadowRoot || n)).join(' ');
  return walk(document.body).replace(/\\s+/g, ' ');
}"""


def click_reaches_python(page: Any) -> float:
    """Click the first button; only Python can change the page's text. Returns ms."""
    before = page.evaluate(PAGE_TEXT_JS)
    started = page.evaluate("() => performance.now()")
    button = page.get_by_role("button").first
    for name in CLICK_NAMES:
        named = page.get_by_role("button", name=name, exact=True)
        if named.count():
            button = named.first
            break
    button.click(timeout=CLICK_TIMEOUT_MS)
    page.wait_for_function(
        f"(before) => ({PAGE_TEXT_JS})() !== before",
        arg=before,
        timeout=CLICK_TIMEOUT_MS,
        polling=5,
    )
    return float(page.evaluate("() => performance.now()")) - started


def test_offline_interactive_and_click(open_app: Any, save_artifact: Any) -> None:
    """A cold load, a click that reaches Python, then a warm load (the same context) of an
    address with a query string, which reaches the app (one load fewer than a test of
    its own: each starts Pyodide)."""
    page, cold = open_app("?scenario=reset")  # (no scenario: the start page, no button)
    save_artifact("cold", cold.summary())
    assert [s for s in cold.status if "(1/3)" in s["text"]], cold.status
    assert [s for s in cold.status if "(3/3)" in s["text"]], cold.status
    assert cold.visible_ms is not None, "the early page never showed"
    assert cold.visible_ms < cold.interactive_ms
    click_ms = click_reaches_python(page)
    assert_clean(cold)
    check_the_page_defines_no_global_of_its_own(page)

    page, warm = open_app(QUERY, page=page)
    assert_clean(warm)
    save_artifact(
        "load",
        {
            "cold": cold.summary(),
            "warm": warm.summary(),
            "click_ms": click_ms,
            "cold_requests": cold.requests,
        },
    )
    check_the_query_string_reaches_the_app(page)


# The classic scripts the builder puts in the page (app/static_site/patches.py); the early
# page's are modules, whose names stay theirs.
PAGE_SHIMS = ("early_worker.js", "queue_in_order.js")
TOP_LEVEL_NAME = re.compile(r"^(?:async )?(?:function|var|let|const|class) (\w+)", re.M)


def check_the_page_defines_no_global_of_its_own(page: Any) -> None:
    """No window.__pcl..., nor any name the builder's scripts declare, is page-wide (issue
    42: 0 page-wide globals). Panel's and Bokeh's own are theirs."""
    named = page.evaluate(
        "() => Object.getOwnPropertyNames(window).filter((name) => /pcl/i.test(name))"
    )
    assert named == [], f"page-wide globals: {named}"
    declared = sorted({n for js in PAGE_SHIMS for n in TOP_LEVEL_NAME.findall(shim(js))})
    assert declared, "no shim's top-level name found to check"
    global_names = page.evaluate(
        "(names) => names.filter((name) => { try { return (0, eval)(`typeof ${name}`)"
        " !== 'undefined' } catch { return true } })",
        declared,
    )
    assert global_names == [], f"the builder's scripts' names are page-wide: {global_names}"


def check_the_query_string_reaches_the_app(page: Any) -> None:
    search = page.evaluate("() => window.location.search")
    assert search == QUERY, f"the query string did not reach the app: {search}"
    text = page.evaluate(PAGE_TEXT_JS)
    if re.search(r"\bn=\d+ mode=", text):  # the stand-in echoes its query
        assert "n=5 mode=keep" in text, f"the stand-in did not echo the query: {text}"


@pytest.mark.parametrize(
    "query", ["", "?scenario=reset&mode=keep&step=3"], ids=["start", "scenario"]
)
def test_a_phone_reads_the_page_at_its_own_width(open_app: Any, query: str) -> None:
    """Chromium's phone emulation: the converted page has its viewport tag, no text under
    14 px, no sideways scroll; and its console has no warning (a simulated vLLM line
    among them) once Python runs the page."""
    page, run = open_app(query, device=PHONE)
    if query:
        expect_step = page.get_by_test_id("step-counter")
        expect_step.wait_for(timeout=CLICK_TIMEOUT_MS)
    check_reads_on_a_phone(page)
    assert_clean(run)
    assert [line for line in run.console if line.startswith("warning")] == []
