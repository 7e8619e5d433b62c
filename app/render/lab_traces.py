"""The "Real traces" HTML: the intro, progress, the sentence under the curve that says in
paper_gap's numbers how far the hit rate is from the paper's and why, and the replay with time's
words and numbers. Pure: it takes the numbers as data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.render.html import esc
from app.render.lab import TEXTS, progress_bar, render_numbers
from engine.lab.traces.paper_gap import PaperGap
from engine.lab.traces.timed import TimedTraceRun

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}
TRACES = TEXTS["traces"]


def render_traces_intro(site_slice: int | None = None) -> str:
    """What the group shows, where the traces come from and under which licence."""
    site = str(TRACES["site_slice"]).format(requests=site_slice) if site_slice else ""
    return str(TRACES["intro"]).format(site=esc(site))


def render_curve_progress(share: float, points: int, total: int) -> str:
    return progress_bar(share, f"Running… {points} of {total} points")


def _pct(rate: float) -> str:
    return f"{rate:.1%}"


def gap_sentence(gap: PaperGap, whole_trace: bool, requests: int) -> str:
    """One engine's unlimited-capacity hit rate against the paper's ratio, in words."""
    engine = ENGINE_NAMES.get(gap.engine, gap.engine)
    found = (
        f"With unlimited capacity, {engine} reuses {_pct(gap.hit_rate)} of the prompt "
        f"tokens ({gap.hits:,} of {gap.prompt_tokens:,})"
    )
    if not whole_trace or gap.paper_cache_ratio is None or gap.gap_tokens is None:
        why = (
            f"this is a slice of {requests:,} requests, and the paper's Table 2 ratio is "
            "of the whole trace, so it cannot be compared"
            if not whole_trace
            else "the paper gives no ratio for this trace"
        )
        return f"{found}; {why}."
    gap_rate = gap.rate(gap.gap_tokens) or 0.0
    direction = "below" if gap.gap_tokens >= 0 else "above"
    beyond = gap.beyond_trace_tokens or 0
    last = "the last prompt token" if gap.block_size == 1 else "the last prompt token's block"
    granularity = (
        ""
        if gap.block_size == 1
        else f"{gap.granularity_tokens:,} ({_pct(gap.rate(gap.granularity_tokens) or 0.0)}) "
        f"are matches ending inside a {gap.block_size}-token block, which a cache of whole "
        f"blocks cannot reuse ({gap.partial_last_unit_tokens:,} in a prompt's partial last "
        "block); "
    )
    return (
        f"{found}, {abs(gap_rate) * 100:.1f} points {direction} the paper's Table 2 ratio "
        f"of {gap.paper_cache_ratio:.0%} ({abs(gap.gap_tokens):,} tokens). "
        f"Of the gap, {gap.cap_tokens:,} tokens ({_pct(gap.rate(gap.cap_tokens) or 0.0)}) "
        f"are {last}, which {engine} always computes; {granularity}"
        f"and {beyond:,} ({_pct(gap.rate(beyond) or 0.0)}) are what the paper's "
        f"ratio counts beyond anything the released trace's ids share (counted in ids, the "
        f"trace's ratio is {_pct(gap.id_ratio)})."
    )


def render_gap_sentences(gaps: Mapping[str, PaperGap], whole_trace: bool, requests: int) -> str:
    """The sentence under the chart, one per engine drawn."""
    if not gaps:
        return ""
    sentences = "".join(
        f'<p data-testid="traces-gap" data-engine="{esc(engine)}">'
        f"{esc(gap_sentence(gap, whole_trace, requests))}</p>"
        for engine, gap in gaps.items()
    )
    return f'<div class="lab-traces-gap">{sentences}</div>'


def render_curve_done(requests: int, seconds: float, engines: int) -> str:
    curves = "curve" if engines == 1 else "curves"
    return f"Done: the {curves} of {requests:,} requests in {seconds:.1f} s."


def render_timed_intro(cannot_show: str) -> str:
    """What the replay with time does, and what it cannot show (said before any run)."""
    return str(TRACES["timed_intro"]).format(cannot_show=esc(cannot_show))


def render_timed_progress(share: float) -> str:
    return progress_bar(share, f"Running with time… {share:.0%} of the requests done")


def render_timed_result(runs: Sequence[TimedTraceRun]) -> str:
    """Each engine's numbers, the time its steps cover and the requests left out."""
    labelled = [(ENGINE_NAMES[run.engine], run) for run in runs]
    notes = "".join(
        f'<p class="lab-note" data-testid="timed-duration">{esc(ENGINE_NAMES[run.engine])}: '
        f"{run.num_steps:,} engine steps of {run.step_ms:g} ms, "
        f"{run.summary()['duration_ms'] / 1000:,.1f} s of the trace"
        + (
            f"; {run.skipped_requests:,} requests left out (too large for the pool even alone)"
            if run.skipped_requests
            else ""
        )
        + ".</p>"
        for run in runs
    )
    return f'<div class="lab-timed-result">{render_numbers(labelled)}{notes}</div>'


def render_timed_done(requests: int, runs: Sequence[TimedTraceRun]) -> str:
    steps = ", ".join(f"{ENGINE_NAMES[run.engine]} {run.num_steps:,} steps" for run in runs)
    return f"Done with time: {requests:,} requests, {steps}."
