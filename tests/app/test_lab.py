"""The workload lab without a browser: knobs, runs, chart data and the outcome text."""

from __future__ import annotations

import asyncio
import gc
import html
import math
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qs, urlsplit

import panel as pn
import pytest
from bokeh.document import Document

import app.data.lab as lab_module
import app.views.lab as lab_view_module
import app.views.lab_charts as lab_charts_module
from app.data.lab import (
    FinishedRuns,
    LabResult,
    LabRun,
    RunAhead,
    RunsInProgress,
    chart_data,
    check_knobs,
    likely_next,
    run_steps,
)
from app.data.side_runs import SideRuns
from app.render.lab import render_outcome, render_run_key
from app.views.fleet_lab import FleetLabView
from app.views.lab import LabView, open_lab
from app.views.lab_charts import CHARTS, RANGE_ANCHOR
from app.views.lab_controls import STALE, attach_shared_models
from app.views.trace_lab import TraceLabView
from engine.lab.play import playground_code
from engine.lab.play.scenario import MODES
from engine.lab.play.scenario_file import scenario_from_dict
from engine.lab.workload.presets import Preset, load_preset
from engine.lab.workload.run import COLUMNS, WorkloadRun
from engine.lab.workload.vllm.runner import WorkloadRunner, run_workload
from engine.lab.workload.workload import Workload
from tests.app.conftest import parse
from tests.app.small_lab import SMALL_KNOBS


@pytest.fixture(autouse=True)
def fresh_run_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no finished run and none in progress: runs of the
    process's stores would otherwise pass from one test to the next. Runs play here
    unless a test gives them side processes."""
    monkeypatch.setattr(lab_module, "FINISHED_RUNS", FinishedRuns())
    monkeypatch.setattr(lab_module, "RUNS_IN_PROGRESS", RunsInProgress())
    monkeypatch.setattr(lab_module, "SIDE_RUNS", SideRuns(0))


def play(view: LabView) -> None:
    asyncio.run(view.start())


def test_check_knobs_gives_a_message_per_bad_knob() -> None:
    knobs = load_preset("shared-prefix").workload.knobs()
    workload, found = check_knobs({**knobs, "requests": 0, "block_size": 0})
    assert workload is None
    assert set(found) == {"requests", "block_size"}
    _, found = check_knobs({**knobs, "requests": None})
    assert found == {"requests": "requests needs a value"}
    workload, found = check_knobs(knobs)
    assert found == {} and workload == load_preset("shared-prefix").workload


def test_chart_data_draws_no_value_as_a_gap() -> None:
    run = run_workload(load_preset("shared-prefix").workload.replace(**SMALL_KNOBS))
    data = chart_data(run)
    assert set(data) == set(COLUMNS)
    assert math.isnan(data["survival_fraction"][0])  # nobody was preempted
    assert data["cumulative_hits"] == [float(v) for v in run.series["cumulative_hits"]]
    assert chart_data(None)["step"] == []
    for chart in CHARTS:
        assert {column for column, _ in chart["series"]} <= set(COLUMNS)


def test_a_lab_run_stops_when_asked() -> None:
    lab_run = LabRun(load_preset("fresh-salt"), load_preset("fresh-salt").workload, overlay=True)
    seen: list[float] = []

    def progress(share: float) -> None:
        seen.append(share)
        lab_run.stop()

    assert asyncio.run(lab_run.play(progress)) is None
    assert len(seen) == 1 and seen[0] < 1


def test_a_long_runs_progress_moves_while_its_requests_are_built() -> None:
    """Hashing the prompts takes most of a big run: the bar moves during it too."""
    fresh = load_preset("fresh-salt")
    lab_run = LabRun(fresh, fresh.workload, False, FinishedRuns())
    seen: list[float] = []
    asyncio.run(lab_run.play(seen.append))
    built = next(i for i, share in enumerate(seen) if share >= 0.5)  # every request built
    assert 0 < seen[0] < 0.5 and built > 1  # several slices before the first step
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_a_knob_change_reruns_only_the_runs_it_changed() -> None:
    finished = FinishedRuns()
    shared = load_preset("shared-prefix")  # overlaid: the same requests, a fresh salt each
    workload = shared.workload.replace(**SMALL_KNOBS)
    first = asyncio.run(LabRun(shared, workload, True, finished).play(lambda _: None))
    assert first is not None and first.compare is not None

    salted = workload.replace(salt="fixed")  # the overlay overrides the salt: it stays
    lab_run = LabRun(shared, salted, True, finished)
    assert [runner.workload for runner in lab_run.runners] == [salted]
    second = asyncio.run(lab_run.play(lambda _: None))
    assert second is not None and second.compare is first.compare
    assert second.run is not first.run and second.run.workload == salted

    # A played run's pool went as the run ended (WorkloadRunner.release), not in a
    # later garbage collection (paused while runs play): the runner can no longer step.
    assert all(runner._released for runner in lab_run.runners) and gc.isenabled()

    back = LabRun(shared, workload, True, finished)  # the knob set back: nothing to run
    assert back.runners == [] and back.progress == 1.0
    again = asyncio.run(back.play(lambda _: None))
    assert again is not None and again.run is first.run


def test_the_view_runs_a_preset_and_only_changes_the_sources_data() -> None:
    view = LabView("fresh-salt")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    sources, figures = list(view.charts.sources), list(view.charts.figures)
    play(view)
    assert view.result is not None
    assert view.charts.sources == sources and view.charts.figures == figures  # the same models
    run, compare = view.result.run, view.result.compare
    assert compare is not None
    assert view.charts.sources[0].data["cumulative_hits"][-1] == 0  # fresh salt: nothing hits
    assert view.charts.sources[1].data["cumulative_hits"][-1] == compare.summary()["hits"] > 0
    assert run.workload.salt == "per-request" and compare.workload.salt == "none"
    view.overlay.value = False
    play(view)
    assert view.charts.sources[1].data["step"] == []


def test_a_run_on_the_served_page_sends_the_charts_new_data() -> None:
    """The three layout roots share the charts' sources: once served, a run's new data
    is a change of the page's document (without attach_shared_models it was none)."""
    document = Document()
    view = LabView("shared-prefix")
    for root in view.roots:
        root.server_doc(document, location=False)  # what servable does on a server
    attach_shared_models(document)
    changes: list[Any] = []
    document.on_change(changes.append)
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)
    changed = {(change.model.name, change.attr) for change in changes if hasattr(change, "attr")}
    assert {("lab-source-run", "data"), ("lab-source-compare", "data")} <= changed


def test_a_bad_knob_shows_its_message_beside_it_and_holds_run() -> None:
    view = LabView("shared-prefix")
    view.knobs["num_gpu_blocks"].value = 50
    assert view.knob_errors["num_gpu_blocks"].visible
    assert "the pool has only 49 usable blocks" in view.knob_errors["num_gpu_blocks"].object
    assert not view.knob_errors["requests"].visible
    assert view.run_button.disabled
    view.knobs["num_gpu_blocks"].value = 20_000
    assert not view.knob_errors["num_gpu_blocks"].visible
    assert not view.run_button.disabled


def test_picking_a_preset_loads_its_knobs() -> None:
    view = LabView("shared-prefix")
    view.preset_select.value = "salt-per-user"
    assert view.knobs["salt"].value == "per-user"
    assert view.overlay.label == "Overlay: fresh salt per request"


def outcome_of(result: LabResult) -> str:
    """The outcome as the lab's view renders it, from the result's data."""
    return render_outcome(result.preset.title, result.expected_outcomes, result.labelled_runs)


def test_the_outcome_quotes_the_engines_numbers_and_drops_the_claim_off_preset() -> None:
    shared = load_preset("shared-prefix")
    run = run_workload(shared.workload)
    result = LabResult(shared, run, None)
    page = parse(outcome_of(result))
    expected = page.find_all(data_testid="lab-expected")[0].text
    assert f"{run.summary()['hit_rate']:.1%}" in expected
    cells = {e.attrs["data-key"]: e.text for e in page.with_attr("data-key")}
    assert cells["hits"] == f"{run.summary()['hits']:,}"
    changed = LabResult(shared, run_workload(shared.workload.replace(**SMALL_KNOBS)), None)
    assert not parse(outcome_of(changed)).find_all(data_testid="lab-expected")


def test_the_learners_run_is_named_by_its_knobs_once_they_differ_from_the_presets() -> None:
    """shared-prefix calls its run "no salt": with one fixed salt that would be false."""

    def names(result: LabResult) -> tuple[str, list[str]]:
        page = parse(outcome_of(result))
        heads = [e.text for e in page.iter() if e.tag == "th" and e.attrs.get("scope") == "col"]
        labels = [label for label, _ in result.labelled_runs]
        key = parse(render_run_key(labels)).find_all(data_testid="lab-key")[0]
        return key.text, heads

    shared = load_preset("shared-prefix")
    small = shared.workload.replace(**SMALL_KNOBS)
    small_preset = Preset(**{**vars(shared), "workload": small})
    as_preset = LabResult(small_preset, run_workload(small), run_workload(small))
    assert names(as_preset) == (
        "Solid: no salt · dashed: fresh salt per request",
        ["no salt", "fresh salt per request"],
    )
    fixed = small.replace(salt="fixed")
    salted = LabResult(small_preset, run_workload(fixed), None)
    assert names(salted) == ("Solid: your knobs: salt = fixed", ["your knobs: salt = fixed"])
    many = LabResult(shared, run_workload(fixed), None)  # five knobs off the preset's
    assert names(many)[1] == ["your knobs (5 changed)"]


def test_a_survival_fraction_without_a_preemption_says_why_it_is_absent() -> None:
    for name, preempted in (("shared-prefix", False), ("preemption-survival", True)):
        picked = load_preset(name)
        run = run_workload(picked.workload)
        assert (run.summary()["preemptions"] > 0) is preempted
        page = parse(outcome_of(LabResult(picked, run, None)))
        cells = {e.attrs["data-key"]: e.text for e in page.with_attr("data-key")}
        notes = [e.text for e in page.find_all(data_testid="lab-absent")]
        if preempted:
            assert cells["survival_fraction"] == f"{run.summary()['survival_fraction']:.1%}"
            assert notes == []
        else:
            assert cells["survival_fraction"] == "n/a"
            assert notes == [
                "Survival fraction: n/a, no preempted request came back, so preempted_hits / "
                "preempted_queries has nothing to divide."
            ]


@pytest.mark.parametrize(("name", "notices"), [("fixed-salt", 0), ("", 0), ("nope", 1)])
def test_open_lab_falls_back_with_a_notice(name: str, notices: int) -> None:
    view = open_lab(name)
    assert view.notice.visible == bool(notices)
    if notices:
        assert "Ignored lab='nope'" in html.unescape(view.notice.object)


def test_a_small_run_shows_the_pool_after_a_clicked_step() -> None:
    view = LabView("small-pool")
    play(view)
    assert view.result is not None
    run = view.result.run
    assert "Click a chart" in view.hint.object
    view.show_step(5)
    page = parse(view.step_view.object)
    assert view.step_view.visible
    assert page.find_all(data_testid="lab-step")[0].attrs["data-step"] == "5"
    states = [cell.attrs["data-state"] for cell in page.with_attr("data-state")]
    assert len(states) == run.workload.num_gpu_blocks
    assert states.count("held") == run.series["held_blocks"][4]
    assert states.count("free-cached") == run.series["free_cached_blocks"][4]
    view.show_step(10_000)  # past the end: the last step
    last = parse(view.step_view.object).find_all(data_testid="lab-step")[0]
    assert last.attrs["data-step"] == str(run.num_steps)


def test_a_big_run_says_it_is_too_big_to_step_through() -> None:
    view = LabView("shared-prefix")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)
    assert "too big" in view.hint.object
    view.show_step(3)
    assert not view.step_view.visible


def test_a_rerun_sends_only_the_charted_columns_and_leaves_the_buttons_alone() -> None:
    """A button or a shown/hidden widget makes the browser lay out every chart again, so
    a run too short to stop changes neither, and the sources carry only what is drawn."""
    view = LabView("fresh-salt")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)
    changed: list[str] = []
    for widget in (view.run_button, view.stop_button):
        widget.param.watch(lambda event: changed.append(event.name), ["disabled", "visible"])
    view.knobs["output_tokens"].value = 3
    play(view)
    view.knobs["output_tokens"].value = SMALL_KNOBS["output_tokens"]  # set back: known
    play(view)
    assert changed == []
    assert view.stop_button.disabled and not view.run_button.disabled
    drawn = {column for chart in CHARTS for column, _ in chart["series"]}
    assert set(view.charts.sources[0].data) == drawn | {"step"} < set(COLUMNS)
    assert "Done" in view.status.object


def test_a_small_run_links_to_the_playground_at_the_step_shown_and_a_big_one_says_why() -> None:
    view = LabView("small-pool")
    play(view)
    assert view.result is not None
    run = view.result.run
    link = parse(view.hint.object).find_all(data_testid="lab-playground-link")[0]
    query = parse_qs(urlsplit(html.unescape(link.attrs["href"])).query)
    assert query["step"] == ["0"] and query["mode"] == ["default"]
    scenario = scenario_from_dict(playground_code.decode(query["playground"][0]))
    assert scenario.num_gpu_blocks == run.workload.num_gpu_blocks
    requests = [a.request.request_id for a in scenario.script if a.request is not None]
    assert requests == [f"req-{i}" for i in range(run.workload.requests)]
    view.show_step(5)
    link = parse(view.hint.object).find_all(data_testid="lab-playground-link")[0]
    query = parse_qs(urlsplit(html.unescape(link.attrs["href"])).query)
    steps = run_steps(run.workload, run.num_steps)
    assert steps is not None and query["step"] == [str(steps.index(5))]
    assert "after engine step 5" in link.text

    big = LabView("shared-prefix")
    for knob, value in SMALL_KNOBS.items():
        big.knobs[knob].value = value
    play(big)
    page = parse(big.hint.object)
    assert not page.find_all(data_testid="lab-playground-link")
    reason = page.find_all(data_testid="lab-playground-reason")[0].text
    assert "its pool has 20,000 blocks" in reason


def test_count_charts_tick_at_whole_numbers() -> None:
    """A chart of counts that stay 0 (no preemptions) labels 0 and 1, not "0, 0, 1, 1"."""
    view = LabView("shared-prefix")
    charts = list(zip(view.charts.figures, CHARTS, strict=True))
    counts = [fig for fig, chart in charts if not chart["rate"]]
    assert counts and all(fig.yaxis[0].ticker.min_interval == 1 for fig in counts)
    rates = [fig for fig, chart in charts if chart["rate"]]
    assert rates and all(fig.yaxis[0].ticker.min_interval != 1 for fig in rates)


def legend_of(view: LabView, index: int) -> list[tuple[str, str, str]]:
    """A chart's legend as (series key, label, pressed) per button."""
    page = parse(view.charts.legends[index].html)
    return [
        (button.attrs["data-key"], button.text, button.attrs["aria-pressed"])
        for button in page.with_attr("data-key")
    ]


def test_each_chart_has_a_legend_of_the_series_it_draws() -> None:
    """Every line or marker of a chart has its button, named as the chart names it; the
    overlay's (dashed) series are listed only while the overlay is drawn."""
    view = LabView("fresh-salt")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)
    drawn = [index for index, pane in enumerate(view.charts.panes) if pane.visible]
    assert drawn
    for index, (fig, chart) in enumerate(zip(view.charts.figures, CHARTS, strict=True)):
        if index not in drawn:
            continue
        legend = legend_of(view, index)
        # (SGLang's series are drawn only when it is chosen: tests/app/test_lab_engines.py)
        vllms = [name for name in series_names(fig) if "/sglang-" not in name]
        assert [key for key, _, _ in legend] == vllms
        assert [label for _, label, _ in legend] == [
            f"{text} ({style})" for _, text in chart["series"] for style in ("solid", "dashed")
        ]
    view.overlay.value = False
    play(view)
    keys = [key for key, _, _ in legend_of(view, 2)]
    assert keys == ["held_blocks/run", "free_cached_blocks/run", "free_empty_blocks/run"]


def run_keys(view: LabView) -> list[str]:
    """The line naming the solid and dashed runs in each legend (of a chart drawn)."""
    return [
        key.text
        for legend, pane in zip(view.charts.legends, view.charts.panes, strict=True)
        if pane.visible
        for key in parse(legend.html).find_all(data_testid="lab-key")
    ]


def test_each_charts_legend_names_its_solid_and_dashed_runs() -> None:
    view = LabView("shared-prefix")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)
    drawn = sum(pane.visible for pane in view.charts.panes)
    assert drawn >= 4
    both = "Solid: your knobs (4 changed) · dashed: fresh salt per request"
    assert run_keys(view) == [both] * drawn
    view.overlay.value = False
    play(view)
    drawn = sum(pane.visible for pane in view.charts.panes)
    assert run_keys(view) == ["Solid: your knobs (4 changed)"] * drawn


def test_a_chart_with_nothing_to_draw_says_so_in_one_line() -> None:
    """No request preempted: the preemption and survival charts give way to a line each;
    a preset that preempts draws them."""
    view = LabView("shared-prefix")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)
    titles = [chart["title"] for chart in CHARTS]
    empty = {
        title: parse(legend.html).find_all(data_testid="chart-empty")
        for title, legend in zip(titles, view.charts.legends, strict=True)
    }
    hidden = [
        title for title, pane in zip(titles, view.charts.panes, strict=True) if not pane.visible
    ]
    assert set(hidden) == {title for title, found in empty.items() if found}
    assert "Preemptions" in hidden and titles[0] not in hidden
    (line,) = empty["Preemptions"]
    assert line.text == "Preemptions: nothing to draw, no request was preempted in either run."
    assert not parse(view.charts.legends[titles.index("Preemptions")].html).with_attr("data-key")
    survival = next(t for t in titles if t.startswith("Survival"))
    assert survival in hidden

    preempting = LabView("preemption-survival")
    play(preempting)
    assert preempting.result is not None and preempting.result.run.summary()["preemptions"] > 0
    assert preempting.charts.panes[titles.index("Preemptions")].visible


def test_results_that_no_longer_match_the_knobs_are_marked_stale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad knob leaves the last results up, marked as the previous knobs' and dimmed;
    a run of new knobs marks them while it plays; fresh results drop the mark."""
    view = LabView("shared-prefix")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)

    def stale() -> bool:
        dimmed = [STALE in root.css_classes for root in view.roots[1:]]
        assert dimmed == [view.stale_note.visible] * 2  # the outcome and the charts
        assert STALE not in view.roots[0].css_classes  # not the knobs
        return bool(view.stale_note.visible)

    assert not stale()
    view.knobs["requests"].value = 0
    assert stale()
    assert parse(view.stale_note.object).find_all(data_testid="lab-stale")[0].text == (
        "These results are for the previous knobs: requests = 12."
    )
    view.knobs["requests"].value = 12  # set back: the results are the knobs' again
    play(view)
    assert not stale()

    monkeypatch.setattr(lab_view_module, "STALE_AFTER_S", -1.0)
    notes: list[str] = []
    view.stale_note.param.watch(lambda event: notes.append(event.new), "object")
    view.knobs["output_tokens"].value = 5
    play(view)
    assert any(
        "requests = 12" not in note
        and "output_tokens = 2. A run of the new knobs is playing." in note
        for note in notes
    )
    assert not stale()
    assert view.result is not None and view.result.run.workload.output_tokens == 5


def test_a_legend_button_hides_and_shows_its_series() -> None:
    view = LabView("shared-prefix")
    fig, legend = view.charts.figures[2], view.charts.legends[2]
    legend.hidden = ["held_blocks/compare"]
    hidden = {r.name for r in fig.renderers if not r.visible}
    assert hidden == {"held_blocks/compare", RANGE_ANCHOR}
    assert all(r.visible for other in view.charts.figures[:2] for r in series(other))
    legend.hidden = []
    assert all(r.visible for r in series(fig))


def series(fig: Any) -> list[Any]:
    """A chart's renderers that draw a series (not its range anchor)."""
    return [r for r in fig.renderers if r.name != RANGE_ANCHOR]


def series_names(fig: Any) -> list[str]:
    return [r.name for r in series(fig)]


def test_the_learners_run_is_shown_before_the_overlays_plays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With both runs to play, the learner's run reaches the page while the overlay's
    has not started; the view then sends each source's data once."""
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(**SMALL_KNOBS)
    lab_run = LabRun(shared, workload, True, FinishedRuns())
    overlay = lab_run.runners[1]
    shown: list[tuple[str, int]] = []

    def first(run: WorkloadRun) -> None:
        shown.append((run.workload.salt, overlay.num_finished))

    result = asyncio.run(lab_run.play(lambda _: None, first))
    assert result is not None and result.compare is not None
    assert shown == [("none", 0)]  # once, the learner's run, the overlay's not begun

    # Only the overlay's run plays: the learner's (known) is shown first, too.
    shown.clear()
    finished = FinishedRuns()
    finished.put(result.run)
    again = LabRun(shared, workload, True, finished)
    overlay = again.runners[0]
    assert overlay.workload == result.compare.workload
    asyncio.run(again.play(lambda _: None, first))
    assert shown == [("none", 0)]

    view = LabView("shared-prefix")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    # The salt of each run put on a chart source, and whether runs were still playing.
    sent: list[tuple[str | None, bool]] = []

    def spy(
        run: WorkloadRun | None, columns: Sequence[str], block_size: int | None = None
    ) -> dict[str, list[float]]:
        sent.append((None if run is None else run.workload.salt, view._run is not None))
        return chart_data(run, columns, block_size)

    play(view)
    monkeypatch.setattr(lab_charts_module, "chart_data", spy)
    view.knobs["salt"].value = "fixed"  # the overlay overrides the salt: its run stays
    play(view)
    assert sent == [("fixed", False)]  # and the overlay's is not sent again
    view.knobs["output_tokens"].value = 3  # both play: the learner's is sent first
    play(view)
    assert sent[1:] == [("fixed", True), ("per-request", False)]


def test_the_runs_played_ahead_are_the_seed_experiments_knob_changes() -> None:
    workload = load_preset("shared-prefix").workload
    ahead = likely_next(workload)
    assert [(w.salt, w.prepend_token) for w in ahead] == [
        ("fixed", False),
        ("per-user", False),
        ("per-request", False),
        ("none", True),
    ]
    # Only those knobs differ from the learner's.
    assert all(w.replace(salt="none", prepend_token=False) == workload for w in ahead)
    # With a reset in the run, the other reset modes too.
    reset = workload.replace(reset_step=5, reset_mode="keep")
    others = [(mode, "none") for mode in MODES if mode != "keep"]
    assert len(others) >= 2 and [(w.reset_mode, w.salt) for w in likely_next(reset)[4:]] == others
    # With the overlay off, its run comes first (the switch is a knob change too).
    off = RunAhead(load_preset("shared-prefix"), workload, overlay=False).runs
    assert off[0] == (workload, True) and all(not o for _, o in off[1:])
    # A run too large to play ahead is left out.
    big = workload.replace(requests=2_000, shared_tokens=800, unique_tokens=200)
    assert RunAhead(load_preset("shared-prefix"), big, overlay=True).runs == []


def test_runs_played_ahead_show_at_once_and_equal_runs_played_for_the_learner() -> None:
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(**SMALL_KNOBS)
    assert asyncio.run(LabRun(shared, workload, True).play(lambda _: None)) is not None
    assert asyncio.run(RunAhead(shared, workload, overlay=True).play()) is True
    for changed in likely_next(workload):
        lab_run = LabRun(shared, changed, True)
        assert lab_run.runners == []  # nothing left to play
        result = asyncio.run(lab_run.play(lambda _: None))
        assert result is not None and result.compare is not None
        # Played in short slices, the runs are the runs played at once.
        assert result.run == run_workload(changed)
        assert result.compare == run_workload(shared.compare_workload(changed))


def test_a_run_ahead_waits_while_a_learners_run_plays(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without its pause, a run ahead would take turns with the learner's, slice by slice.
    monkeypatch.setattr(lab_module, "AHEAD_PAUSE_S", 0)
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(**SMALL_KNOBS)
    ahead = RunAhead(shared, workload, overlay=False)
    learners = LabRun(shared, workload.replace(requests=150), False)
    ahead_work: list[tuple[int, int]] = []

    def work_done_ahead() -> tuple[int, int]:
        run = ahead._current
        assert run is not None
        return (sum(r.num_prepared for r in run.runners), sum(r.step for r in run.runners))

    async def both() -> None:
        task = asyncio.create_task(ahead.play())
        while ahead._current is None or work_done_ahead() == (0, 0):
            await asyncio.sleep(0)  # the run ahead has begun
        await learners.play(lambda _: ahead_work.append(work_done_ahead()))
        assert await task is True

    asyncio.run(both())
    assert len(ahead_work) > 1 and len(set(ahead_work)) == 1  # no slice ahead meanwhile
    assert LabRun.playing_for_learners == 0


def test_a_run_asked_for_twice_at_once_plays_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sessions opening one preset at the same moment share the run."""
    built: list[Workload] = []

    class CountedRunner(WorkloadRunner):
        def __init__(self, workload: Workload) -> None:
            built.append(workload)
            super().__init__(workload)

    monkeypatch.setattr(lab_module, "WorkloadRunner", CountedRunner)
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(**SMALL_KNOBS)

    async def two_sessions() -> list[LabResult | None]:
        runs = [LabRun(shared, workload, True) for _ in range(2)]
        return list(await asyncio.gather(*(run.play(lambda _: None) for run in runs)))

    first, second = asyncio.run(two_sessions())
    assert built == [workload, shared.compare_workload(workload)]
    assert first is not None and second is not None
    assert first.run is second.run and first.compare is second.compare
    assert first.run == run_workload(workload)


def test_a_stopped_run_goes_on_from_where_it_stopped() -> None:
    fresh = load_preset("fresh-salt")
    workload = fresh.workload.replace(requests=120)
    stopped = LabRun(fresh, workload, False)
    seen: list[float] = []

    def stop_half_way(share: float) -> None:
        seen.append(share)
        if share >= 0.5:
            stopped.stop()

    assert asyncio.run(stopped.play(stop_half_way)) is None
    again = LabRun(fresh, workload, False)
    assert again.runners == stopped.runners and again.progress == seen[-1] >= 0.5
    result = asyncio.run(again.play(lambda _: None))
    assert result is not None and result.run == run_workload(workload)


def test_the_view_plays_ahead_once_a_run_is_shown_and_stops_when_a_knob_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    view = LabView("shared-prefix")
    for knob, value in SMALL_KNOBS.items():
        view.knobs[knob].value = value
    play(view)
    first_ahead = view._ahead
    assert first_ahead is not None
    asyncio.run(first_ahead.play())
    built: list[Workload] = []
    monkeypatch.setattr(lab_module, "WorkloadRunner", lambda w: built.append(w))
    view.knobs["salt"].value = "per-user"  # a run played ahead: shown without playing
    play(view)
    assert view.result is not None and view.result.run.workload.salt == "per-user"
    assert view.charts.sources[0].data["step"] == chart_data(view.result.run)["step"]
    # Neither run was played again (the runs ahead of this one are new runners).
    shown = view.result.run.workload, view.result.compare and view.result.compare.workload
    assert not set(shown) & set(built) and view.status.object.startswith("Done:")
    # The next knob change stops the runs ahead of the last one.
    second_ahead = view._ahead
    assert second_ahead is not None and second_ahead is not first_ahead
    view.knobs["output_tokens"].value = 5
    monkeypatch.undo()
    play(view)
    assert second_ahead.stopped


def test_one_run_ahead_plays_at_a_time_in_a_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many sessions on one server: their runs ahead take turns, whole, one by one."""
    monkeypatch.setattr(lab_module, "AHEAD_START_S", 0)
    shared = load_preset("shared-prefix")
    aheads = [
        RunAhead(shared, shared.workload.replace(**{**SMALL_KNOBS, "requests": n}), overlay=True)
        for n in (12, 13, 14)
    ]
    turns: list[tuple[str, int]] = []
    play_runs = RunAhead._play

    async def recorded(self: RunAhead) -> bool:
        turns.append(("begins", aheads.index(self)))
        try:
            return await play_runs(self)
        finally:
            turns.append(("ends", aheads.index(self)))

    monkeypatch.setattr(RunAhead, "_play", recorded)

    async def sessions() -> list[bool]:
        return list(await asyncio.gather(*(ahead.play() for ahead in aheads)))

    assert asyncio.run(sessions()) == [True, True, True]
    assert [turns[i][1] for i in range(0, 6, 2)] == [turns[i][1] for i in range(1, 6, 2)]
    assert [kind for kind, _ in turns] == ["begins", "ends"] * 3
    assert RunAhead.playing is None


def test_the_cycle_collector_pauses_while_runs_play_and_comes_back() -> None:
    """Runs may overlap (a learner's and one played ahead): the collector comes back
    when the last ends, also when a run is stopped, and stays off if it was off."""
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(**{**SMALL_KNOBS, "output_tokens": 3})
    seen: list[bool] = []
    result = asyncio.run(
        LabRun(shared, workload, False, FinishedRuns()).play(lambda _: seen.append(gc.isenabled()))
    )
    assert result is not None and seen and not any(seen) and gc.isenabled()

    stopped = LabRun(shared, workload.replace(output_tokens=4), False, FinishedRuns())
    stopped.stop()
    assert asyncio.run(stopped.play(lambda _: None)) is None and gc.isenabled()

    with lab_module.cycle_collector_paused():
        with lab_module.cycle_collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with lab_module.cycle_collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "page",
    [lambda: LabView("shared-prefix"), TraceLabView, FleetLabView],
    ids=["workload", "traces", "fleet"],
)
def test_each_lab_page_links_back_to_the_simulator(page: Any) -> None:
    """The same relative link on the three pages (the static site's own page, too)."""
    intro = page().roots[0].objects[0].objects[0].object
    assert '<a href="?">Back to the step-by-step simulator</a>' in intro


def test_chart_titles_are_html_above_the_charts_so_they_wrap() -> None:
    """A Bokeh title does not wrap: a phone's narrow chart cut the long ones off."""
    lab, traces, fleet = LabView("shared-prefix"), TraceLabView(), FleetLabView()
    cells = [*lab.charts.cells(), pn.Column(traces.curve_chart.title, traces.curve_chart.pane)]
    for cell in [*cells, *fleet.charts.cells]:
        title, chart, *_ = cell.objects
        assert 'class="chart-title"' in title.object and not chart.object.title.text
    for title, chart in zip(lab.charts.titles, CHARTS, strict=True):
        assert chart["title"] in title.object
