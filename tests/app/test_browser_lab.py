"""The workload lab in a real browser on `panel serve`: a preset runs, the charts hold the
engine's series, a knob reruns it on the same charts, a bad knob says why beside it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from app.views.lab_charts import CHARTS
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.play.script_lines import format_lines
from engine.lab.play.vllm.timeline import build_timeline
from engine.lab.workload.presets import load_preset
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import workload_scenario
from tests.app import test_browser_serve as serve
from tests.app.lab_checks import (
    check_a_bad_knob_says_why,
    check_a_chart_on_the_first_screen,
    check_a_long_run_stops,
    check_both_engines_share_the_charts,
    check_both_runs_follow_a_knob,
    check_legend_hides_and_shows,
    check_stale_results_are_marked,
    click_a_chart,
    playground_of,
    preset_runs,
    set_the_output_back,
    source,
)
from tests.app.playground_checks import check_playground_step, field
from tests.app.test_browser_serve import Watched

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

pytestmark = pytest.mark.browser

# The serve tests' fixtures: one `panel serve` and one Chromium for this module too.
server, playwright, browser, watched = serve.server, serve.playwright, serve.browser, serve.watched
launched = serve.launched

RUN_TIMEOUT_MS = 60_000


def open_lab(watched: Watched, server: str, query: str) -> Any:
    page = watched.page
    page.goto(f"{server}{query}")
    expect(page.get_by_test_id("lab-outcome")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    return page


def test_a_preset_runs_and_its_charts_hold_the_engines_series(
    watched: Watched, server: str
) -> None:
    shared, run, compare = preset_runs("shared-prefix")
    page = open_lab(watched, server, "?lab=shared-prefix")
    hit_rate = source(page, "run", "cumulative_hit_rate")
    assert hit_rate["values"] == pytest.approx(run.series["cumulative_hit_rate"])
    assert source(page, "compare", "cumulative_hits")["values"] == compare.series["cumulative_hits"]
    expect(page.get_by_test_id("lab-expected")).to_have_text(shared.expected_text(run, compare))
    expect(page.get_by_test_id("lab-numbers")).to_contain_text(f"{run.summary()['hits']:,}")
    check_legend_hides_and_shows(page, "held (dashed)", "held_blocks/compare")
    check_a_chart_on_the_first_screen(page)
    # Each chart drawn names its runs; the two with nothing to draw (no preemption) say
    # so in a line each instead of an empty frame.
    expect(page.get_by_test_id("lab-key")).to_have_text(
        ["Solid: no salt · dashed: fresh salt per request"] * (len(CHARTS) - 2)
    )
    assert all(v is None for v in run.series["survival_fraction"])
    expect(page.get_by_test_id("chart-empty")).to_have_text(
        [
            "Preemptions: nothing to draw, no request was preempted in either run.",
            "Survival fraction: preempted_hits / preempted_queries: nothing to draw, no "
            "preempted request came back to a cache hit in either run.",
        ]
    )

    # A knob reruns the workload: new data in the same source, no new chart.
    page.get_by_role("checkbox", name="Prepend a per-request token").check()
    off_preset = page.get_by_text("The knobs differ from the preset")
    expect(off_preset).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # The preset calls its run "no salt", which stays true; the run is named by its knob.
    expect(page.get_by_test_id("lab-key").first).to_have_text(
        "Solid: your knobs: prepend_token = True · dashed: fresh salt per request"
    )
    page.wait_for_function(
        "() => Bokeh.documents.some(doc => {"
        "  const source = doc.get_model_by_name('lab-source-run');"
        "  return source && source.data.cumulative_hits.every(v => v === 0); })",
        timeout=RUN_TIMEOUT_MS,
    )
    assert source(page, "run", "cumulative_hit_rate")["id"] == hit_rate["id"]
    # A 20,000-block pool cannot be drawn block by block: the lab says so, with no link.
    expect(page.get_by_test_id("lab-playground-reason")).to_contain_text(
        "its pool has 20,000 blocks"
    )
    expect(page.get_by_test_id("lab-playground-link")).to_have_count(0)


class TestSharedPrefixPage:
    """One lab page of `shared-prefix` for the three tests below, in their order (each
    leaves the preset's knobs as it found them; the engine knob last), closed after them:
    two loads and first runs fewer. Its console and requests are checked after each."""

    @pytest.fixture(scope="class")
    def lab(self, browser: Any, server: str) -> Iterator[Watched]:
        seen = Watched(browser.new_page(), server.rsplit("/", 1)[0])
        open_lab(seen, server, "?lab=shared-prefix")
        yield seen
        seen.page.close()

    @pytest.fixture(autouse=True)
    def clean(self, lab: Watched) -> Iterator[None]:
        yield
        assert not lab.errors, f"console errors and warnings: {lab.errors}"
        assert not lab.foreign, f"requests outside the origin: {lab.foreign}"

    def test_results_that_no_longer_match_the_knobs_are_marked_stale(self, lab: Watched) -> None:
        check_stale_results_are_marked(lab.page)

    def test_both_runs_follow_a_knob_they_share(self, lab: Watched) -> None:
        """The server's side process plays the overlay's run (app/data/side_runs.py): the
        charts hold the engine's runs all the same."""
        check_both_runs_follow_a_knob(lab.page, RUN_TIMEOUT_MS)
        set_the_output_back(lab.page, RUN_TIMEOUT_MS)  # for the next test on this page

    def test_both_engines_share_the_charts_and_the_summary(self, lab: Watched) -> None:
        check_both_engines_share_the_charts(lab.page, RUN_TIMEOUT_MS)


def test_the_address_picks_the_engine_and_a_bad_one_says_why(watched: Watched, server: str) -> None:
    page = open_lab(watched, server, "?lab=shared-prefix&engine=sglang")
    expect(page.get_by_label("Engine")).to_have_value("SGLang")
    heads = page.get_by_test_id("lab-numbers").locator("th[scope=col]")
    expect(heads).to_have_text(["SGLang: no salt", "SGLang: fresh salt per request"])
    # vLLM's step view has no SGLang meaning: the page says so, with no playground link.
    expect(page.get_by_test_id("lab-no-steps")).to_be_visible()
    expect(page.get_by_test_id("lab-playground-link")).to_have_count(0)
    page.goto(f"{server}?lab=shared-prefix&engine=tpu")
    expect(page.get_by_text("Ignored engine='tpu': not one of vllm, sglang, both")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    expect(page.get_by_label("Engine")).to_have_value("vLLM")
    expect(page.get_by_test_id("lab-outcome")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    # The traces' group is a preset of the picker: it opens as its own page.
    page.get_by_label("Preset").select_option("real-traces")
    page.wait_for_url("**lab=real-traces**", timeout=RUN_TIMEOUT_MS)
    expect(page.get_by_test_id("traces-intro")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert not watched.errors


def test_a_bad_knob_says_why_beside_it(watched: Watched, server: str) -> None:
    check_a_bad_knob_says_why(open_lab(watched, server, "?lab=fresh-salt"))


def test_picking_a_preset_runs_it_and_the_address_follows(watched: Watched, server: str) -> None:
    prepend = load_preset("prepend-token")
    run = run_workload(prepend.workload)
    page = open_lab(watched, server, "?lab=shared-prefix")
    page.get_by_label("Preset").select_option("prepend-token")
    expect(page.get_by_test_id("lab-outcome")).to_contain_text(
        prepend.title, timeout=RUN_TIMEOUT_MS
    )
    assert source(page, "run", "cumulative_queries")["values"] == run.series["cumulative_queries"]
    page.wait_for_url("**lab=prepend-token**", timeout=RUN_TIMEOUT_MS)


def test_the_main_page_links_to_the_lab_and_a_bad_preset_gets_a_notice(
    watched: Watched, server: str
) -> None:
    page = watched.page
    page.goto(f"{server}?scenario=reset")  # (an address with no scenario: the start page)
    page.get_by_test_id("lab-link").click()
    expect(page.get_by_test_id("lab-outcome")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    assert "lab=shared-prefix" in page.url
    page.goto(f"{server}?lab=nope")
    expect(page.get_by_text("Ignored lab='nope'")).to_be_visible(timeout=RUN_TIMEOUT_MS)


def test_a_click_on_a_chart_opens_the_step_view_at_that_step(watched: Watched, server: str) -> None:
    small = load_preset("small-pool")
    run = run_workload(small.workload)
    page = open_lab(watched, server, "?lab=small-pool")
    expect(page.get_by_test_id("lab-hint")).to_be_visible()
    step_view, step = click_a_chart(page, RUN_TIMEOUT_MS)
    assert 1 < step < run.num_steps
    cells = step_view.locator("[data-state]")
    expect(cells).to_have_count(small.workload.num_gpu_blocks)
    held = step_view.locator('[data-state="held"]')
    expect(held).to_have_count(run.series["held_blocks"][step - 1])


def test_a_small_run_opens_in_the_playground_at_the_step_shown(
    watched: Watched, server: str
) -> None:
    small = load_preset("small-pool")
    run = run_workload(small.workload)
    _, after_step = workload_scenario(small.workload, run.num_steps)
    page = open_lab(watched, server, "?lab=small-pool")
    link = page.get_by_test_id("lab-playground-link")
    expect(link).to_be_visible()
    assert playground_of(link)[1] == 0  # no step picked yet: the start of the run
    _, engine_step = click_a_chart(page, RUN_TIMEOUT_MS)
    expect(link).to_contain_text(f"after engine step {engine_step}")
    data, step = playground_of(link)
    assert step == after_step[engine_step - 1]
    with page.context.expect_page() as opened:
        link.click()
    playground = opened.value
    seen = Watched(playground, watched.origin)
    timeline = build_timeline(scenario_from_dict(data), "default")
    check_playground_step(playground, timeline, step)
    # The same requests, one add_request per request of the run, in the editor.
    script = field(playground, "Script (one action per line)")
    expect(script).to_have_value(format_lines(data["steps"]))
    requests = [a["id"] for a in data["steps"] if a["do"] == "add_request"]
    assert requests == [f"req-{i}" for i in range(small.workload.requests)]
    held = playground.locator('[data-testid^="block-"][data-state="held"]')
    expect(held).to_have_count(run.series["held_blocks"][engine_step - 1])
    playground.close()
    assert not seen.errors, f"console errors in the playground: {seen.errors}"


def test_a_long_run_shows_progress_and_stops(watched: Watched, server: str) -> None:
    check_a_long_run_stops(open_lab(watched, server, "?lab=fresh-salt"), RUN_TIMEOUT_MS)


def test_a_long_run_on_both_engines_shows_progress_and_stops(watched: Watched, server: str) -> None:
    page = open_lab(watched, server, "?lab=fresh-salt&engine=both")
    check_a_long_run_stops(page, RUN_TIMEOUT_MS, ("run", "sglang-run"))


@pytest.mark.parametrize("query", ["?lab=shared-prefix", "?lab=shared-prefix&engine=both"])
def test_the_lab_fits_a_phone_without_horizontal_scroll(
    launched: Any, server: str, query: str
) -> None:
    """(Both engines: a numbers table of four runs scrolls inside itself.)"""
    with serve.own_context(launched, viewport={"width": 390, "height": 844}) as context:
        watched = Watched(context.new_page(), server.rsplit("/", 1)[0])
        page = open_lab(watched, server, query)
        # The overlay's checkbox and the status line wrap below what is beside them.
        expect(page.get_by_text("Done: 200 requests")).to_be_visible(timeout=RUN_TIMEOUT_MS)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        overlay = page.get_by_text("Overlay: fresh salt per request").bounding_box()
        preset_picker = page.locator("select").first.bounding_box()
        assert overlay is not None and preset_picker is not None
        assert overlay["y"] > preset_picker["y"] + preset_picker["height"] - 1
        assert not watched.errors and not watched.foreign


TRACES_SOURCE_JS = """([name, column]) => {
  const doc = Bokeh.documents.filter(d => d.get_model_by_name('traces-source-vllm')).at(-1);
  const source = doc?.get_model_by_name(name);
  return source ? Array.from(source.data[column]) : null;
}"""


def test_real_traces_draw_both_engines_curves_and_the_gap_sentence(
    watched: Watched, server: str
) -> None:
    from app.data.trace_lab import shipped_trace, trace_path
    from engine.lab.traces.replay import capacities_for
    from engine.lab.traces.sglang.replay import hit_rate_curve_sglang
    from engine.lab.traces.vllm.replay import HashedTrace, hit_rate_curve

    if trace_path("synthetic") is None:
        pytest.skip("the Mooncake traces are not here")
    entries = list(shipped_trace("synthetic")[:40])
    capacities = capacities_for(entries)
    vllm = [p.hit_rate for p in hit_rate_curve(HashedTrace.of(entries), capacities)]
    sglang = [p.hit_rate for p in hit_rate_curve_sglang(entries, capacities)]

    page = watched.page
    page.goto(f"{server}?lab=real-traces")
    expect(page.get_by_test_id("traces-source")).to_contain_text("Apache License 2.0")
    # The first curve (the default slice) plays on load.
    expect(page.get_by_text("Done: the curve of 300 requests")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    page.locator(".traces-trace select").select_option("synthetic")
    page.locator(".traces-engine select").select_option("both")
    field = page.locator(".traces-requests input")
    field.fill("40")
    field.press("Enter")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_text("Done: the curves of 40 requests")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    for name, rates in (("vllm", vllm), ("sglang", sglang)):
        drawn = page.evaluate(TRACES_SOURCE_JS, [f"traces-source-{name}", "hit_rate"])
        assert drawn == pytest.approx(rates)
        capacity = page.evaluate(TRACES_SOURCE_JS, [f"traces-source-{name}", "capacity"])
        assert capacity == capacities
    # A slice is not compared with the paper: no diamond, and the sentence says why.
    assert page.evaluate(TRACES_SOURCE_JS, ["traces-source-paper", "y"]) == []
    sentences = page.get_by_test_id("traces-gap")
    expect(sentences).to_have_count(2)
    expect(sentences.first).to_contain_text(f"vLLM reuses {vllm[-1]:.1%}")
    expect(sentences.first).to_contain_text("a slice of 40 requests")

    # A file of one's own with a bad line: the engine's message beside the file input.
    page.locator(".traces-upload input[type=file]").set_input_files(
        files=[
            {
                "name": "mine.jsonl",
                "mimeType": "application/json",
                "buffer": b'{"timestamp": 0, "input_length": 10, "output_length": 1}\n',
            }
        ]
    )
    expect(page.locator(".traces-upload [role=alert]")).to_have_text("line 1: hash_ids: missing")


def test_real_traces_replay_a_slice_with_time_on_the_labs_charts(
    watched: Watched, server: str
) -> None:
    from app.data.trace_lab import shipped_trace, trace_path
    from engine.lab.traces.timed import CANNOT_SHOW, TimedKnobs, run_trace_timed

    if trace_path("synthetic") is None:
        pytest.skip("the Mooncake traces are not here")
    expected = run_trace_timed(
        list(shipped_trace("synthetic")[:20]), TimedKnobs(500_000, step_ms=10.0)
    )

    page = watched.page
    page.goto(f"{server}?lab=real-traces")
    expect(page.get_by_test_id("timed-cannot-show")).to_have_text(CANNOT_SHOW)
    expect(page.get_by_text("Done: the curve of 300 requests")).to_be_visible(
        timeout=RUN_TIMEOUT_MS
    )
    page.locator(".traces-trace select").select_option("synthetic")
    for knob, value in (("requests", "20"), ("step_ms", "10"), ("capacity", "500000")):
        field = page.locator(f".traces-{knob} input")
        field.fill(value)
        field.press("Enter")
    page.get_by_role("button", name="Run with time").click()
    expect(page.get_by_text("Done with time: 20 requests")).to_be_visible(timeout=RUN_TIMEOUT_MS)
    steps = page.evaluate(TRACES_SOURCE_JS, ["timed-source-vllm-run", "step"])
    assert steps == expected.series["step"]
    hits = page.evaluate(TRACES_SOURCE_JS, ["timed-source-vllm-run", "cumulative_hits"])
    assert hits == expected.series["cumulative_hits"]
    cell = page.get_by_test_id("lab-numbers").locator("td[data-key=steps]")
    expect(cell).to_have_text(f"{expected.num_steps:,}")
    expect(page.get_by_test_id("timed-duration")).to_contain_text(
        f"{expected.num_steps:,} engine steps of 10 ms"
    )
    assert not watched.errors and not watched.foreign
