"""The workload lab on both engines, without a browser: the engine knob, a run per engine
on the same charts, the summary side by side, each engine's words, the address."""

from __future__ import annotations

import asyncio
import html
import math

import pytest

import app.data.lab as lab_module
from app.data.lab import FinishedRuns, LabRun, RunsInProgress, chart_data
from app.data.side_runs import SideRuns
from app.views.lab import LabView, open_lab
from app.views.lab_charts import CHARTS, SOURCE_KEYS
from app.views.trace_lab import TraceLabView
from engine.lab.workload.presets import load_preset
from engine.lab.workload.sglang.runner import run_sglang_workload
from engine.lab.workload.vllm.runner import run_workload
from tests.app.conftest import parse
from tests.app.small_lab import SMALL_KNOBS
from tests.app.test_lab import legend_of, play


@pytest.fixture(autouse=True)
def fresh_run_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    """As tests/app/test_lab.py: no run passes from one test to the next."""
    monkeypatch.setattr(lab_module, "FINISHED_RUNS", FinishedRuns())
    monkeypatch.setattr(lab_module, "RUNS_IN_PROGRESS", RunsInProgress())
    monkeypatch.setattr(lab_module, "SIDE_RUNS", SideRuns(0))


def test_a_lab_run_on_both_engines_gives_each_engines_runs_side_by_side() -> None:
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(**SMALL_KNOBS)
    compare = shared.compare_workload(workload)
    assert compare is not None
    lab_run = LabRun(shared, workload, True, engines=("vllm", "sglang"))
    result = asyncio.run(lab_run.play(lambda _: None))
    assert result is not None and result.engines == ("vllm", "sglang")
    assert result.run == run_workload(workload)
    assert result.run_of("sglang") == run_sglang_workload(workload)
    assert result.run_of("sglang", compare=True) == run_sglang_workload(compare)
    # The summary table: the learner's run on each engine, then the overlay's, each named.
    labels = [label for label, _ in result.labelled_runs]
    assert labels == [
        "vLLM: your knobs (4 changed)",
        "SGLang: your knobs (4 changed)",
        "vLLM: fresh salt per request",
        "SGLang: fresh salt per request",
    ]
    assert [run.engine for _, run in result.labelled_runs] == ["vllm", "sglang"] * 2


def test_a_run_on_both_engines_shows_its_progress_and_stops_while_sglang_plays() -> None:
    fresh = load_preset("fresh-salt")
    workload = fresh.workload.replace(requests=60)
    lab_run = LabRun(fresh, workload, True, engines=("vllm", "sglang"))
    seen: list[float] = []

    def progress(share: float) -> None:
        seen.append(share)
        # vLLM's two runs are done, SGLang's first is under way: Stop. (Its 60 requests
        # all finish at its last step: SGLang prefills every batch it can admit before
        # the running requests decode.)
        if lab_run.runners[2].step > 0:
            lab_run.stop()

    assert asyncio.run(lab_run.play(progress)) is None
    assert [r.engine_name for r in lab_run.runners] == ["vllm", "vllm", "sglang", "sglang"]
    assert not lab_run.runners[2].done and lab_run.runners[3].step == 0
    assert seen == sorted(seen) and 0.5 < seen[-1] < 1


def test_sglang_alone_plays_no_vllm_run() -> None:
    fresh = load_preset("fresh-salt")
    workload = fresh.workload.replace(**SMALL_KNOBS)
    result = asyncio.run(LabRun(fresh, workload, False, engines=("sglang",)).play(lambda _: None))
    assert result is not None and result.engines == ("sglang",)
    assert result.run_of("vllm") is None
    assert result.run == run_sglang_workload(workload)
    assert [label for label, _ in result.labelled_runs] == ["SGLang: your knobs (4 changed)"]


def test_sglangs_pool_is_charted_in_blocks_worth() -> None:
    workload = load_preset("small-pool").workload
    run = run_sglang_workload(workload)
    data = chart_data(run)
    size = workload.block_size
    assert data["free_empty_blocks"] == [v / size for v in run.series["free_empty_blocks"]]
    assert data["evictions"] == [v / size for v in run.series["evictions"]]
    assert data["cumulative_hits"] == [float(v) for v in run.series["cumulative_hits"]]
    assert all(math.isnan(v) for v in data["preemptions"])  # no value on SGLang: a gap


def both_engines_view(name: str, small: bool = True) -> LabView:
    view = LabView(name, engine="both")
    if small:
        for knob, value in SMALL_KNOBS.items():
            view.knobs[knob].value = value
    play(view)
    assert view.result is not None
    return view


def test_both_engines_lines_are_on_the_same_charts_and_each_legend_names_its_engine() -> None:
    view = both_engines_view("shared-prefix")
    assert view.result is not None
    sources = dict(zip(SOURCE_KEYS, view.charts.sources, strict=True))
    sglang, sglang_compare = view.result.run_of("sglang"), view.result.run_of("sglang", True)
    assert sglang is not None and sglang_compare is not None
    expected = chart_data(sglang)
    assert sources["sglang", "run"].data["cumulative_hits"] == expected["cumulative_hits"]
    assert sources["sglang", "compare"].data["step"] == chart_data(sglang_compare)["step"]
    assert sources["vllm", "run"].data["step"] == chart_data(view.result.run)["step"]
    labels = [label for _, label, _ in legend_of(view, 0)]
    assert labels == [
        f"{engine} {text} ({style})"
        for _, text in CHARTS[0]["series"]
        for engine in ("vLLM", "SGLang")
        for style in ("solid", "dashed")
    ]
    # The chart of the pool says how SGLang's slots are drawn.
    assert "SGLang: KV slots / block_size" in view.charts.titles[2].object
    # Preemptions: none on vLLM here, retractions not charted on SGLang: the line says both.
    said = [
        tag.text
        for legend in view.charts.legends
        for tag in parse(legend.html).find_all(data_testid="chart-empty")
    ]
    assert any(
        "no request was preempted in any run" in s and "rather than preempting" in s for s in said
    )
    # The summary: a column per engine and run, SGLang's figures beside vLLM's.
    (table,) = parse(view.outcome.object).find_all(data_testid="lab-numbers")
    heads = [th.text for th in table.find_all(scope="col")]
    assert heads == [label for label, _ in view.result.labelled_runs]
    hits = [td.text for td in table.find_all(data_key="hits")]
    assert hits[1] == f"{sglang.summary()['hits']:,}"
    evicted = table.find_all(data_key="evictions")
    assert evicted[3].text == f"{sglang_compare.summary()['evictions']:,} tokens"
    assert view.status.object == (
        f"Done: 12 requests: vLLM {view.result.run.num_steps:,} steps, "
        f"SGLang {sglang.num_steps:,} steps."
    )
    assert evicted[2].text.endswith(" blocks")


@pytest.mark.parametrize("name", ["shared-prefix", "fresh-salt", "prepend-token"])
def test_the_seeds_experiments_say_what_each_engine_did_in_its_own_numbers(name: str) -> None:
    """The preset's words per engine, filled in by that engine's run."""
    view = both_engines_view(name, small=False)
    assert view.result is not None
    outcome = parse(view.outcome.object)
    engines = [h3.text for h3 in outcome.iter() if h3.tag == "h3"]
    paragraphs = [p.text for p in outcome.find_all(data_testid="lab-expected")]
    assert engines == ["vLLM", "SGLang"]
    picked = load_preset(name)
    for (run, compare), text in zip(view.result.engine_runs, paragraphs, strict=True):
        assert text == picked.expected_text(run, compare)
        assert f"{run.summary()['hit_rate']:.1%}" in text
    assert paragraphs[0] != paragraphs[1]
    assert paragraphs[1].startswith("On SGLang")


def test_sglang_alone_says_the_step_view_is_vllms_and_preemptions_are_not_modelled() -> None:
    view = LabView("small-pool", engine="SGLang")
    play(view)
    assert view.result is not None and view.result.engines == ("sglang",)
    hint = parse(view.hint.object)
    assert hint.find_all(data_testid="lab-no-steps")
    assert not hint.find_all(data_testid="lab-playground-link")
    view.show_step(3)  # a click on a chart: nothing to step, nothing breaks
    assert not view.step_view.visible
    said = [
        legend.html
        for legend, pane in zip(view.charts.legends, view.charts.panes, strict=True)
        if not pane.visible
    ]
    assert said and all("rather than preempting" in text for text in said)
    assert "in this run" not in " ".join(said)
    numbers = parse(view.outcome.object).find_all(data_testid="lab-absent")
    assert any("SGLang retracts requests rather than preempting" in p.text for p in numbers)
    # release_req frees only what lies past cache_protected_len: the prompt stays cached
    assert any("their prompt stays in the tree" in p.text for p in numbers)


def test_the_address_carries_the_engine_and_a_bad_one_gets_a_notice() -> None:
    view = open_lab("shared-prefix", "sglang")
    assert isinstance(view, LabView) and view.engine.value == "SGLang"
    assert view.engines == ("sglang",)
    view.engine.value = "both"
    assert view.address_bar.query == "lab=shared-prefix&engine=both"
    bad = open_lab("shared-prefix", "tpu")
    assert isinstance(bad, LabView) and bad.engine.value == "vLLM"
    assert bad.notice.visible
    said = html.unescape(bad.notice.object)
    assert "Ignored engine='tpu': not one of vllm, sglang, both" in said
    traces = open_lab("real-traces", "both")
    assert isinstance(traces, TraceLabView) and traces.engines == ("vllm", "sglang")


def test_a_result_of_other_engines_is_marked_stale() -> None:
    view = LabView("fresh-salt")
    play(view)
    assert view.result is not None
    knobs, overlay = view.knob_values(), view.overlay.value
    assert view.result.changes_from(view._preset, knobs, overlay, ("vllm",)) == []
    changes = view.result.changes_from(view._preset, knobs, overlay, ("vllm", "sglang"))
    assert changes == ["engine vLLM"]


def test_with_both_engines_a_click_steps_vllms_run_and_says_so() -> None:
    view = LabView("small-pool", engine="both")
    play(view)
    assert view.result is not None
    assert "Click a chart at a step to see vLLM's pool" in view.hint.object
    view.show_step(3)
    assert view.step_view.visible
    assert parse(view.hint.object).find_all(data_testid="lab-playground-link")


def test_the_real_traces_are_in_the_preset_picker_and_open_as_their_own_page() -> None:
    view = LabView("shared-prefix", engine="both")
    assert "real-traces" in view.preset_select.options
    view.preset_select.value = "real-traces"
    assert view.address_bar.load == "?lab=real-traces&engine=both"
    traces = TraceLabView()
    assert traces.preset_select.value == "real-traces"
    traces.preset_select.value = "prepend-token"
    assert traces.address_bar.load == "?lab=prepend-token&engine=vllm"
