"""The workload lab on the offline static site: the engine runs in Pyodide, and the
charts hold the same series as the engine in CPython."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from app.lab import preset
from engine.lab.workload import run_workload
from tests.app.lab_checks import click_a_chart, preset_runs, source

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = [pytest.mark.site, pytest.mark.browser]

# Two runs of 200 requests of 2,200 tokens in Pyodide on a busy 2-core machine.
RUN_TIMEOUT_MS = 180_000


def test_a_preset_runs_in_pyodide_with_the_engines_series(
    site_page: Callable[..., tuple[Any, Any]],
) -> None:
    fixed, run, compare = preset_runs("fixed-salt")
    page, _ = site_page("?lab=fixed-salt")
    expect(page.get_by_test_id("lab-outcome")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert source(page, "run", "cumulative_hits")["values"] == run.series["cumulative_hits"]
    compare_hits = source(page, "compare", "cumulative_hits")
    assert compare_hits["values"] == compare.series["cumulative_hits"]
    expect(page.get_by_test_id("lab-expected")).to_have_text(fixed.expected_text(run, compare))


def test_a_click_on_a_chart_opens_the_step_view_in_pyodide(
    site_page: Callable[..., tuple[Any, Any]],
) -> None:
    small = preset("small-pool")
    run = run_workload(small.workload)
    page, _ = site_page("?lab=small-pool")
    expect(page.get_by_test_id("lab-hint")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    step_view, step = click_a_chart(page, RUN_TIMEOUT_MS)
    assert 1 <= step <= run.num_steps
    held = step_view.locator('[data-state="held"]')
    expect(held).to_have_count(run.series["held_blocks"][step - 1])
