"""SGLang in the app (issue 31 item 4): a scenario that plays on both engines opens with
SGLang's timelines beside vLLM's, and every view shows SGLang's own renderer on them (or
nothing, where the view has no SGLang meaning), the code panel SGLang's traced source."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.data import timelines
from app.data.bundle import bundle
from app.data.timelines import timeline_key
from app.data.url import parse_link
from app.page.layout import App
from app.render.code_plan import code_parts
from app.render.header import render_sglang_embed_header, render_sglang_header
from app.render.kv_slots import render_kv_slots
from app.render.metrics import render_sglang_metrics
from app.render.narration import render_log, render_narration
from app.render.radix_tree import render_radix_tree
from app.render.requests import render_sglang_requests
from app.views.base import StepView
from app.views.panels import (
    EmbedHeaderView,
    HashMapView,
    HeaderView,
    LogView,
    MetricsView,
    NarrationView,
    OffloadView,
    PoolView,
    QueueView,
    RequestsView,
)
from engine.lab.play.questions import all_questions
from engine.lab.play.scenario import SGLANG_MODES
from engine.lab.play.sglang.timeline import SGLangTimeline

BOTH = [n for n in timelines.names() if "sglang" in timelines.scenario(n).engines]
VLLM_ONLY = next(n for n in timelines.names() if n not in BOTH)

# Each view's page on an SGLang timeline: SGLang's renderer, or None where the view has
# no SGLang meaning (its page is empty, so its deck hides).
ON_SGLANG: dict[type[StepView], Callable[[SGLangTimeline, int], str] | None] = {
    HeaderView: render_sglang_header,
    EmbedHeaderView: render_sglang_embed_header,
    PoolView: render_kv_slots,
    HashMapView: render_radix_tree,
    RequestsView: render_sglang_requests,
    MetricsView: render_sglang_metrics,
    LogView: render_log,
    NarrationView: render_narration,
    QueueView: None,
    OffloadView: None,
}


def sglang_timelines() -> list[SGLangTimeline]:
    found = [t for n in BOTH for t in timelines.of_scenario(n) if isinstance(t, SGLangTimeline)]
    return found


def test_every_scenario_on_both_engines_opens_both_engines_timelines() -> None:
    assert {"shared-prefix", "unaligned-prefix", "eviction-order", "cache-salt"} <= set(BOTH)
    for name in BOTH:
        played = timelines.scenario(name)
        keys = [timeline_key(t) for t in timelines.of_scenario(name)]
        modes = (*played.modes, *played.sglang.modes)
        assert keys == [f"{name}/{m}" for m in modes]
        assert len(set(keys)) == len(keys)  # fcfs/lpm are no vLLM mode: one key, one timeline
    assert all(t.engine == "vllm" for t in timelines.of_scenario(VLLM_ONLY))


@pytest.mark.parametrize("view", list(ON_SGLANG), ids=lambda v: v.__name__)
def test_every_view_shows_sglangs_renderer_on_every_sglang_step(view: type[StepView]) -> None:
    expected = ON_SGLANG[view]
    for timeline in sglang_timelines():
        for step in range(len(timeline.steps)):
            page = view.render(timeline, step)
            assert page == (expected(timeline, step) if expected else ""), (
                f"{view.__name__} at {timeline_key(timeline)} step {step}"
            )
            if expected is not None:
                assert page  # SGLang's page shows something


def test_the_bundle_holds_sglangs_pages_code_and_questions() -> None:
    shared = timelines.of_scenario("shared-prefix")
    views = {view.__name__: view.render for view in ON_SGLANG}
    sent = bundle(shared, views, (timeline_key(shared[0]), 0))
    lpm = timelines.timeline("shared-prefix", "lpm")
    key = timeline_key(lpm)
    assert key == "shared-prefix/lpm" and sent["lasts"][key] == len(lpm.steps) - 1
    for step in range(len(lpm.steps)):
        deck = sent["views"]["HashMapView"]
        assert deck["pages"][deck["orders"][key][step]] == render_radix_tree(lpm, step)
        plan = sent["code"]["plans"][key][step]
        assert sent["code"]["frames"][plan["frame"]] == code_parts(lpm, step).frame
    # SGLang's steps ask their own questions, about the tree (engine/lab/play/sglang/questions.py)
    assert sent["questions"][key] == all_questions(lpm)
    assert any(all_questions(lpm))


def test_the_code_panel_shows_sglangs_own_source() -> None:
    lpm = timelines.timeline("shared-prefix", "lpm")
    files = set()
    for step in range(1, len(lpm.steps)):
        parts = code_parts(lpm, step)
        assert 'data-file="engine/sglang/' in parts.frame and parts.ran
        files |= {t.file for t in lpm.steps[step].code}
        for index, trace in enumerate(lpm.steps[step].code):
            picked = code_parts(lpm, step, index)
            assert f'data-qualname="{trace.qualname}"' in picked.frame
    assert "engine/sglang/radix_cache.py" in files


def test_an_address_opens_sglang_and_a_vllm_only_scenario_says_why_it_cannot() -> None:
    link = parse_link("?scenario=shared-prefix&mode=lpm&step=3")
    assert (link.scenario, link.mode, link.step, link.notices) == ("shared-prefix", "lpm", 3, ())
    app = App(link)
    assert isinstance(app.state.timeline, SGLangTimeline) and app.state.key == "shared-prefix/lpm"
    assert app.hash_map.html == render_radix_tree(app.state.timeline, 3)
    assert app.pool.html == render_kv_slots(app.state.timeline, 3)
    assert app.queue.html == "" and app.offload.html == ""
    queries = app.page.opened["queries"]
    assert queries["shared-prefix/lpm"] == {"scenario": "shared-prefix", "mode": "lpm"}

    bad = parse_link(f"?scenario={VLLM_ONLY}&mode=lpm")
    assert bad.mode == timelines.scenario(VLLM_ONLY).modes[0]
    (notice,) = bad.notices
    assert "mode='lpm'" in notice and "SGLang" in notice and "vLLM only" in notice


def test_a_scenario_on_both_engines_sends_both_engines_timelines() -> None:
    app = App(parse_link("?scenario=shared-prefix&mode=default"))
    assert set(app.page.sglang_modes) == set(SGLANG_MODES)
    document = app.page.opened
    assert {"shared-prefix/fcfs", "shared-prefix/lpm"} <= set(document["lasts"])
    lpm = timelines.timeline("shared-prefix", "lpm")
    # The page holds SGLang's pages too: picking it at step 2 asks nothing of Python.
    assert document["held"]["shared-prefix/lpm"] == [0, len(lpm.steps)]
    assert app.hash_map.render(lpm, 2) == app.sender.page("HashMapView", "shared-prefix/lpm", 2)
    app.page.request({"ask": "pick", "name": VLLM_ONLY})  # (the picker hides itself)
    assert all(timelines.engine_of(k.split("/")[1]) == "vllm" for k in app.page.opened["lasts"])


def test_the_hash_chain_and_prefill_pickers_hide_on_sglang() -> None:
    """On SGLang their pages are empty, and an empty page hides its whole component,
    pickers and fields included, in the browser (step_deck.js): Python changes nothing."""
    app = App(parse_link("?scenario=shared-prefix&mode=default&step=2"))
    assert app.chain.html and app.prefill.html
    assert "data-pick" in app.chain.html and "data-fields" in app.prefill.html
    for view in ("chain", "prefill"):
        assert app.sender.page(view, "shared-prefix/fcfs", 2) == ""
        assert app.sender.page(view, "shared-prefix/default", 2)  # back on vLLM: the same step


def test_a_policy_a_both_engine_scenario_does_not_play_names_the_ones_it_does() -> None:
    """eviction-order plays on SGLang with fcfs only: lpm's notice says so, not "vLLM only"."""
    scenario = next(
        name
        for name in timelines.names()
        if "sglang" in timelines.scenario(name).engines
        and "lpm" not in timelines.scenario(name).sglang.modes
    )
    policies = timelines.scenario(scenario).sglang.modes
    (notice,) = parse_link(f"?scenario={scenario}&mode=lpm").notices
    assert "vLLM only" not in notice
    assert f"plays on SGLang with {', '.join(policies)} only" in notice
