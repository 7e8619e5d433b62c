"""The beginner's path on the static site, before Python is ready.

An address without a position opens the start page's early page (build.py,
app/data/url.py); its links are plain HTML, so the loading veil goes at once and a link
opens that scenario's own early page, which steps before Python too. The questions and
the glossary work there as well: they need no Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app.data import timelines
from app.render.start_page import learning_path
from engine.lab.play.questions import questions_at
from tests.app.page_checks import check_step
from tests.site.conftest import RECORDER_JS, PageRun, assert_clean, record, wait_interactive
from tests.site.test_early_steps import EARLY_TIMEOUT_MS, HELD

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.site, pytest.mark.browser]


@pytest.fixture
def held(chromium: Any, held_site: Any) -> Iterator[Callable[[str], tuple[Any, PageRun, Any]]]:
    """held(query) -> (page, run, release): opened with Panel's wheel held back."""
    opened: list[tuple[Any, PageRun, Any]] = []

    def _open(query: str) -> tuple[Any, PageRun, Any]:
        url, release = held_site(HELD)
        context = chromium.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(30_000)
        context.add_init_script(RECORDER_JS)
        page = context.new_page()
        run = PageRun(origin=url)
        record(page, run)
        page.goto(f"{url}/{query}", wait_until="commit", timeout=30_000)
        opened.append((context, run, release))
        return page, run, release

    yield _open
    for context, run, release in opened:
        release.set()
        context.close()
        assert_clean(run)


def test_the_start_page_works_before_python_and_opens_a_scenario(held: Any) -> None:
    page, run, release = held("")
    start = page.get_by_test_id("start-page")
    expect(start).to_be_visible(timeout=EARLY_TIMEOUT_MS)
    expect(page.locator("body.pn-loading.pcl-start")).to_have_count(1)  # Python not ready
    order = list(learning_path().order)
    items = page.locator('[data-testid="learning-path"] li[data-scenario]')
    assert items.evaluate_all("els => els.map(e => e.dataset.scenario)") == order
    # The glossary's disclosure is plain HTML too.
    page.get_by_text("Glossary", exact=True).click()
    expect(page.locator("#term-ref_cnt")).to_be_visible()

    first = order[0]
    page.get_by_role("link", name=timelines.scenario(first).title, exact=True).click()
    page.wait_for_url(f"**/?scenario={first}")
    tl = timelines.timeline(first, timelines.scenario(first).modes[0])
    expect(page.locator("body.pcl-early")).to_have_count(1, timeout=EARLY_TIMEOUT_MS)
    page.get_by_role("button", name="Step forward").click()
    check_step(page, tl, 1)
    release.set()
    wait_interactive(page, run)
    check_step(page, tl, 1)


def test_questions_and_glossary_work_before_python(held: Any) -> None:
    tl = timelines.timeline("reset", "default")
    page, run, release = held("?scenario=reset&mode=default")
    expect(page.locator("body.pcl-early")).to_have_count(1, timeout=EARLY_TIMEOUT_MS)
    asked = questions_at(tl, 0)[0]
    question = page.get_by_test_id("question").first
    question.get_by_role("button", name=asked.options[asked.answer], exact=True).click()
    expect(question.get_by_test_id("verdict")).to_contain_text("Right.")
    expect(page.get_by_test_id("quiz-score")).to_have_text("1 of 1 right")
    page.get_by_test_id("pool").get_by_role("link", name="ref_cnt").click()
    expect(page.locator("#term-ref_cnt")).to_be_visible()
    expect(page.locator("body.pn-loading")).to_have_count(1)  # all of it before Python
    # The live page keeps the answer: it is in the browser, not in Python.
    release.set()
    wait_interactive(page, run)
    check_step(page, tl, 0)
    expect(page.get_by_test_id("quiz-score")).to_have_text("1 of 1 right")
    expect(page.get_by_test_id("verdict")).to_have_count(1)


def test_the_embed_asks_before_python_when_its_address_says_quiz(held: Any) -> None:
    """`quiz=1` does not change the copy: the embed's copy opens early, asking."""
    tl = timelines.timeline("reset", "keep")
    page, _run, _release = held("?scenario=reset&mode=keep&embed=1&quiz=1")
    expect(page.locator("body.pcl-early")).to_have_count(1, timeout=EARLY_TIMEOUT_MS)
    # The embed asks one question at a time.
    expect(page.get_by_test_id("question")).to_have_count(min(1, len(questions_at(tl, 0))))
    page.get_by_role("button", name="Step forward").click()
    check_step(page, tl, 1)
    expect(page.get_by_test_id("question")).to_have_count(min(1, len(questions_at(tl, 1))))
