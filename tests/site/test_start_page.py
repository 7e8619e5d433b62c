"""The static site opens on the start page, which works before Python is ready.

The page's own pre-rendered document is the start page (build.py, app/url.py); its
links are plain HTML, so the loading veil goes at once and a link opens that
scenario's own copy, which steps before Python too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app import timelines
from app.start_page import learning_path
from tests.app.page_checks import check_step
from tests.site.conftest import RECORDER_JS, PageRun, assert_clean, record, wait_interactive
from tests.site.test_early_steps import EARLY_TIMEOUT_MS, HELD

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.site, pytest.mark.browser]


@pytest.fixture
def held_start(chromium: Any, held_site: Any) -> Iterator[tuple[Any, PageRun, Any]]:
    """The site's address without a query, with Panel's wheel held back."""
    url, release = held_site(HELD)
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(30_000)
    context.add_init_script(RECORDER_JS)
    page = context.new_page()
    run = PageRun(origin=url)
    record(page, run)
    page.goto(f"{url}/", wait_until="commit", timeout=30_000)
    yield page, run, release
    release.set()
    context.close()
    assert_clean(run)


def test_the_start_page_works_before_python_and_opens_a_scenario(
    held_start: tuple[Any, PageRun, Any],
) -> None:
    page, run, release = held_start
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
