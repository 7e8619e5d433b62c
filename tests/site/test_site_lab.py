"""The workload lab on the offline static site: the engine runs in Pyodide, and the
charts hold the same series as the engine in CPython."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import format_lines
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.workload.presets import load_preset
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import workload_scenario
from tests.app.lab_checks import (
    check_a_bad_knob_says_why,
    check_a_chart_on_the_first_screen,
    check_a_long_run_stops,
    check_both_engines_share_the_charts,
    check_both_runs_follow_a_knob,
    check_legend_hides_and_shows,
    click_a_chart,
    playground_of,
    preset_runs,
    set_the_output_back,
    source,
)
from tests.app.playground_checks import check_playground_step, field
from tests.site.conftest import PageRun, assert_clean, kept_page, record, wait_interactive

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
    check_legend_hides_and_shows(page, "queries (solid)", "cumulative_queries/run")
    check_a_chart_on_the_first_screen(page)


class TestSharedPrefixPage:
    """One lab page of `shared-prefix` for the two tests below, in their order (a load
    starts Pyodide again: about 7 s of both cores, and the preset's first runs), closed
    after them."""

    @pytest.fixture(scope="class")
    def page(self, shared_context: Any, site_url: str) -> Iterator[Any]:
        with kept_page(shared_context, site_url, "?lab=shared-prefix") as (page, _):
            expect(page.get_by_test_id("lab-outcome")).to_be_visible(timeout=RUN_TIMEOUT_MS)
            yield page

    def test_the_overlays_run_plays_in_a_side_worker_with_the_engines_series(
        self, page: Any
    ) -> None:
        """A second Pyodide worker plays the overlay's run (app/data/side_runs.py) once it
        is ready; the charts hold the engine's runs all the same."""
        side = ready_side_worker(page)
        check_both_runs_follow_a_knob(page, RUN_TIMEOUT_MS)
        assert side.evaluate("() => self.pclAnswered") == 1
        set_the_output_back(page, RUN_TIMEOUT_MS)  # for the next test on this page

    def test_both_engines_share_the_charts_in_pyodide(self, page: Any) -> None:
        """SGLang's model runs in Pyodide too: with both engines, its runs join vLLM's."""
        check_both_engines_share_the_charts(page, RUN_TIMEOUT_MS)


def ready_side_worker(page: Any) -> Any:
    """The lab's side worker, once it has said it is ready (it starts after the first
    run is shown, and loads Pyodide: a few seconds)."""
    for _ in range(1200):
        side = next((w for w in page.workers if w.url.endswith("/side_worker.js")), None)
        if side is not None and side.evaluate("() => self.pclAnswered") == 0:
            page.wait_for_timeout(2000)  # its ready message reaches the app's worker
            return side
        page.wait_for_timeout(100)
    raise AssertionError("the side worker never got ready")


def test_a_click_on_a_chart_opens_the_step_view_and_the_playground_in_pyodide(
    site_page: Callable[..., tuple[Any, Any]], site_url: str
) -> None:
    small = load_preset("small-pool")
    run = run_workload(small.workload)
    _, after_step = workload_scenario(small.workload, run.num_steps)
    page, _ = site_page("?lab=small-pool")
    expect(page.get_by_test_id("lab-hint")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    _, step = click_a_chart(page, RUN_TIMEOUT_MS)
    assert 1 <= step <= run.num_steps
    held = page.get_by_test_id("lab-step").locator('[data-state="held"]')
    expect(held).to_have_count(run.series["held_blocks"][step - 1])

    # The run opens in the playground (a new tab) after the same step, same requests.
    link = page.get_by_test_id("lab-playground-link")
    expect(link).to_contain_text(f"after engine step {step}", timeout=RUN_TIMEOUT_MS)
    data, index = playground_of(link)
    assert index == after_step[step - 1]
    with page.context.expect_page() as opened:
        link.click()
    playground = opened.value
    loaded = PageRun(origin=site_url)
    detach = record(playground, loaded)
    wait_interactive(playground, loaded)
    timeline = build_timeline(scenario_from_dict(data), "default")
    expect.set_options(timeout=RUN_TIMEOUT_MS)
    try:
        check_playground_step(playground, timeline, index)
    finally:
        expect.set_options(timeout=5_000)  # Playwright's default
    requests = [a["id"] for a in data["steps"] if a["do"] == "add_request"]
    assert requests == [f"req-{i}" for i in range(small.workload.requests)]
    script = field(playground, "Script (one action per line)")
    expect(script).to_have_value(format_lines(data["steps"]))
    detach()
    playground.close()
    assert_clean(loaded)


@pytest.fixture(scope="module")
def fresh_salt_page(shared_context: Any, site_url: str) -> Iterator[Any]:
    """One lab page of `fresh-salt` for the three tests below, in their order (a load
    starts Pyodide again): the first run's verdict, then a bad knob, then a long run."""
    with kept_page(shared_context, site_url, "?lab=fresh-salt") as (page, _):
        yield page


def test_a_run_too_large_for_the_playground_says_why_in_pyodide(fresh_salt_page: Any) -> None:
    reason = fresh_salt_page.get_by_test_id("lab-playground-reason")
    expect(reason).to_contain_text("its pool has 20,000 blocks", timeout=RUN_TIMEOUT_MS)
    expect(fresh_salt_page.get_by_test_id("lab-playground-link")).to_have_count(0)


def test_a_bad_knob_says_why_beside_it_in_pyodide(fresh_salt_page: Any) -> None:
    outcome = fresh_salt_page.get_by_test_id("lab-outcome")
    expect(outcome).to_be_visible(timeout=RUN_TIMEOUT_MS)
    pool = fresh_salt_page.get_by_label("num_gpu_blocks", exact=True)
    size = pool.input_value()
    check_a_bad_knob_says_why(fresh_salt_page)
    # The pool set back, for the next test on this page: the message goes, Run comes back.
    pool.fill(size)
    pool.press("Enter")
    expect(fresh_salt_page.get_by_role("alert")).to_have_count(0)
    expect(fresh_salt_page.get_by_role("button", name="Run")).to_be_enabled()


def test_a_long_run_shows_progress_and_stops_in_pyodide(fresh_salt_page: Any) -> None:
    outcome = fresh_salt_page.get_by_test_id("lab-outcome")
    expect(outcome).to_be_visible(timeout=RUN_TIMEOUT_MS)
    check_a_long_run_stops(fresh_salt_page, RUN_TIMEOUT_MS)
