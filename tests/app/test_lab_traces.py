"""The workload lab's "Real traces" group, without a browser: the curve's points are the
engine's, Stop stops, a bad line gets the engine's message, and the sentence under the
chart is filled by paper_gap's numbers; the replay with time is the engine's, on the
workload lab's charts, with what it cannot show."""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest

from app.data.trace_lab import (
    TraceCurveRun,
    TraceTimedRun,
    check_trace_knobs,
    shipped_trace,
    timed_problems,
    trace_path,
)
from app.render.lab import gap_sentence, render_gap_sentences
from app.views.lab_charts import SOURCE_KEYS
from app.views.lab_controls import STALE
from app.views.trace_lab import TraceLabView
from engine.lab.traces.paper_gap import paper_gap
from engine.lab.traces.replay import PAPER_CACHE_RATIO, capacities_for
from engine.lab.traces.request_trace import TraceError, parse_trace, parse_trace_bytes
from engine.lab.traces.sglang.replay import hit_rate_curve_sglang
from engine.lab.traces.timed import CANNOT_SHOW, TimedKnobs, run_trace_timed
from engine.lab.traces.vllm.replay import HashedTrace, hit_rate_curve
from tests.app.conftest import parse

pytestmark = pytest.mark.skipif(
    trace_path("synthetic") is None, reason="the Mooncake traces are not here"
)

SLICE = 60


def small_slice() -> list:
    return list(shipped_trace("synthetic")[:SLICE])


def test_the_curves_points_are_the_engines_hit_rate_curve() -> None:
    entries = small_slice()
    run = TraceCurveRun("synthetic", entries, False, engines=("vllm", "sglang"))
    drawn: list[tuple[str, int]] = []
    curve = asyncio.run(run.play(lambda engine, points: drawn.append((engine, len(points)))))
    assert curve is not None
    capacities = capacities_for(entries)
    assert curve.capacities == capacities
    vllm = list(hit_rate_curve(HashedTrace.of(entries), capacities))
    sglang = list(hit_rate_curve_sglang(entries, capacities))
    assert [p.hit_rate for p in curve.points["vllm"]] == [p.hit_rate for p in vllm]
    assert [p.hits for p in curve.points["sglang"]] == [p.hits for p in sglang]
    # Each point was drawn as it was ready, one engine after the other.
    n = len(capacities)
    assert drawn == [("vllm", i) for i in range(1, n + 1)] + [
        ("sglang", i) for i in range(1, n + 1)
    ]
    assert run.progress == 1.0
    # A slice is not compared with the paper.
    assert curve.paper_ratio is None
    assert curve.gaps["vllm"].paper_cache_ratio is None


def test_stop_stops_the_curve() -> None:
    run = TraceCurveRun("synthetic", small_slice(), False, engines=("vllm", "sglang"))
    drawn: list[int] = []

    def stop_after_two(engine: str, points: list) -> None:
        drawn.append(len(points))
        if len(drawn) == 2:
            run.stop()

    assert asyncio.run(run.play(stop_after_two)) is None
    assert drawn == [1, 2]
    assert run.points["sglang"] == []


def test_a_bad_trace_line_gets_the_engines_message() -> None:
    good = json.dumps({"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]})
    bad = json.dumps({"timestamp": 5, "input_length": 600, "output_length": 1})
    data = f"{good}\n{bad}\n".encode()
    with pytest.raises(TraceError) as engine_error:
        parse_trace(data.decode().splitlines())
    for sent in (data, gzip.compress(data)):
        with pytest.raises(TraceError) as lab_error:
            parse_trace_bytes(sent)
        assert str(lab_error.value) == str(engine_error.value)
        assert "line 2" in str(lab_error.value)
    assert len(parse_trace_bytes(gzip.compress(f"{good}\n".encode()))) == 1
    with pytest.raises(TraceError, match="not a readable text file"):
        parse_trace_bytes(b"\xff\xfe\x00")


def test_trace_knobs_say_what_is_wrong() -> None:
    assert check_trace_knobs(100, 512, 4000) == {}
    assert set(check_trace_knobs(-1, 8, 4000)) == {"requests", "block_size"}
    assert "slice" in check_trace_knobs(0, 64, 4000)["block_size"]
    assert check_trace_knobs(500, 64, 4000) == {}


def test_the_sentence_is_filled_by_paper_gaps_numbers() -> None:
    entries = list(shipped_trace("synthetic"))
    hashed = HashedTrace.of(entries)
    (unlimited,) = hit_rate_curve(hashed, [hashed.whole_trace_capacity])
    gap = paper_gap(entries, unlimited, PAPER_CACHE_RATIO["synthetic"])
    sentence = gap_sentence(gap, True, len(entries))
    assert gap.gap_tokens is not None and gap.beyond_trace_tokens is not None
    for number in (
        f"{gap.hit_rate:.1%}",
        f"{gap.hits:,}",
        f"{gap.prompt_tokens:,}",
        f"{abs(gap.gap_tokens) / gap.prompt_tokens * 100:.1f} points below",
        "66%",
        f"{gap.gap_tokens:,} tokens",
        f"{gap.cap_tokens:,} tokens",
        f"{gap.granularity_tokens:,}",
        f"{gap.partial_last_unit_tokens:,}",
        f"{gap.beyond_trace_tokens:,}",
        f"{gap.id_ratio:.1%}",
    ):
        assert number in sentence, number
    # The causes add up to the gap, as paper_gap's tokens do.
    assert gap.cap_tokens + gap.granularity_tokens + gap.beyond_trace_tokens == gap.gap_tokens
    html = parse(render_gap_sentences({"vllm": gap}, True, len(entries)))
    (paragraph,) = html.find_all(data_testid="traces-gap")
    assert paragraph.text == sentence
    # A slice says it cannot be compared, and names no paper ratio.
    sliced = gap_sentence(gap, False, 100)
    assert "cannot be compared" in sliced and "66%" not in sliced


TIMED_CAPACITY = 200_000


def test_the_replay_with_time_is_the_engines_on_each_engine() -> None:
    entries = small_slice()
    run = TraceTimedRun(entries, ("vllm", "sglang"), TIMED_CAPACITY, 512, 50.0)
    shares: list[float] = []
    runs = asyncio.run(run.play(shares.append))
    assert runs is not None and [r.engine for r in runs] == ["vllm", "sglang"]
    for played in runs:
        knobs = TimedKnobs(TIMED_CAPACITY, engine=played.engine, step_ms=50.0)
        expected = run_trace_timed(entries, knobs)
        assert played.series == expected.series
        assert played.step_times_ms == expected.step_times_ms
    # vLLM's blocks are the page's block size; SGLang keeps its default page (1 token).
    assert [r.workload.block_size for r in runs] == [512, 1]
    assert shares == sorted(shares) and run.progress == 1.0


def test_stop_stops_the_replay_with_time() -> None:
    run = TraceTimedRun(small_slice(), ("vllm", "sglang"), TIMED_CAPACITY, 512, 25.0)
    assert asyncio.run(run.play(lambda _: run.stop())) is None
    assert run.runs == []


def test_the_timed_knobs_say_what_is_wrong() -> None:
    found = timed_problems(small_slice(), ("vllm",), 100, 512, 0.0)
    assert set(found) == {"capacity_tokens", "step_ms"}
    assert "holds no 512-token block" in found["capacity_tokens"]


def test_the_page_replays_the_slice_with_time_on_the_lab_charts() -> None:
    view = TraceLabView(engine="both")
    assert CANNOT_SHOW in parse(view.timed_intro.object).text
    view.knobs["trace"].value = "synthetic"
    view.knobs["requests"].value = 20
    view.knobs["capacity"].value = TIMED_CAPACITY
    view.knobs["step_ms"].value = 0.0
    asyncio.run(view.start_timed())
    assert view.timed is None
    assert "step_ms must be a positive number" in view.knob_errors["step_ms"].object

    view.knobs["step_ms"].value = 25.0
    asyncio.run(view.start_timed())
    assert view.timed is not None and not view.knob_errors["step_ms"].visible
    entries = list(shipped_trace("synthetic")[:20])
    for played, source in zip(view.timed, view.timed_charts.sources[::2], strict=True):
        expected = run_trace_timed(entries, TimedKnobs(TIMED_CAPACITY, engine=played.engine))
        assert source.data["step"] == [float(s) for s in expected.series["step"]]
        assert source.data["cumulative_hit_rate"] == pytest.approx(
            expected.series["cumulative_hit_rate"], nan_ok=True
        )
    table = parse(view.timed_numbers.object)
    steps = table.find_all(data_key="steps")
    assert [cell.text for cell in steps] == [f"{r.num_steps:,}" for r in view.timed]
    assert "Done with time: 20 requests" in view.status.object
    # A series hidden in a legend is hidden on its chart, as on the presets' page.
    legend, fig = view.timed_charts.legends[0], view.timed_charts.figures[0]
    legend.hidden = ["cumulative_hit_rate/run"]
    hidden = [r for r in fig.renderers if r.name == "cumulative_hit_rate/run"]
    assert hidden and not hidden[0].visible


def timed_view() -> TraceLabView:
    """The page after a replay with time of 20 requests on both engines."""
    view = TraceLabView(engine="both")
    view.knobs["trace"].value = "synthetic"
    view.knobs["requests"].value = 20
    view.knobs["capacity"].value = TIMED_CAPACITY
    asyncio.run(view.start_timed())
    assert view.timed is not None
    return view


def test_no_empty_charts_stand_for_a_replay_with_time_not_run() -> None:
    view = TraceLabView(engine="both")
    assert not view.timed_box.visible
    assert timed_view().timed_box.visible


def test_both_engines_pools_are_drawn_in_one_unit() -> None:
    """SGLang's KV slots (pages of 1 token) in blocks of the page's block_size, vLLM's
    unit: the two pools of one capacity are the same height (SGLang's were 512 times
    vLLM's, whose line lay flat at zero)."""
    view = timed_view()
    sources = dict(zip(SOURCE_KEYS, view.timed_charts.sources, strict=True))
    pools = {}
    for engine in ("vllm", "sglang"):
        data = sources[engine, "run"].data
        columns = ("held_blocks", "free_cached_blocks", "free_empty_blocks")
        pools[engine] = max(sum(data[c][i] for c in columns) for i in range(len(data["step"])))
    assert pools["sglang"] == pytest.approx(pools["vllm"], rel=0.01)
    assert pools["vllm"] == pytest.approx(TIMED_CAPACITY / 512, abs=1)


def test_a_changed_knob_marks_the_results_stale_at_once() -> None:
    view = timed_view()
    root = view.roots[1]
    assert not view.stale_note.visible and STALE not in root.css_classes
    view.knobs["requests"].value = 30
    assert view.stale_note.visible and STALE in root.css_classes
    assert "requests = 20" in view.stale_note.object
    view.engine.value = "vLLM"
    assert "engine = both" in view.stale_note.object
    view.knobs["requests"].value, view.engine.value = 20, "both"
    assert not view.stale_note.visible and STALE not in root.css_classes


def test_a_new_curve_drops_a_replay_with_time_of_another_slice() -> None:
    view = timed_view()
    view.knobs["requests"].value = 10
    asyncio.run(view.start())
    assert view.timed is None and not view.timed_box.visible
    assert not view.stale_note.visible


def test_the_curves_dashed_line_says_it_is_the_papers_cache() -> None:
    from bokeh.models.annotations import Label, Span

    from app.views.lab_charts import CurveChart
    from engine.lab.traces.replay import PAPER_LOCAL_CACHE_TOKENS

    fig = CurveChart().figure
    (span,) = [a for a in fig.center if isinstance(a, Span)]
    labels = [a for a in fig.center if isinstance(a, Label)]
    assert span.location == PAPER_LOCAL_CACHE_TOKENS
    assert [(a.x, a.text) for a in labels] == [
        (PAPER_LOCAL_CACHE_TOKENS, "the paper's cache: 3,000,000 tokens")
    ]


def test_the_curves_legend_names_only_what_is_drawn() -> None:
    """A vLLM-only slice draws no SGLang line and no paper's ratio: no label without a swatch."""
    from types import SimpleNamespace

    from app.views.lab_charts import CurveChart

    def shown(chart: CurveChart) -> list[str]:
        items = chart.figure.legend.items
        return [item.label.value for item in items if item.visible]

    view = TraceLabView(engine="vLLM")
    view.knobs["trace"].value, view.knobs["requests"].value = "synthetic", 20
    assert shown(view.curve_chart) == []
    asyncio.run(view.start())
    assert shown(view.curve_chart) == ["vLLM"]
    curve = SimpleNamespace(paper_ratio=0.5, capacities=[1_000])
    view.curve_chart.show_paper_ratio(curve)  # type: ignore[arg-type]
    assert shown(view.curve_chart) == ["vLLM", "paper's Table 2 ratio"]
    view.curve_chart.clear([1_000])
    assert shown(view.curve_chart) == []
