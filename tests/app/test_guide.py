"""The beginner's path without a browser: the start page, the glossary, the questions."""

from __future__ import annotations

import re

import pytest

from app.data import timelines
from app.data.lab_presets import FLEET_PRESET, TRACES_PRESET, default_preset
from app.data.url import START_PAGE, early_page_of, early_pages, lab_link, parse_link
from app.page.layout import App
from app.playground import store
from app.render import glossary
from app.render.chain import render_chain
from app.render.header import render_header
from app.render.metrics import render_metrics
from app.render.narration import render_narration
from app.render.pool import render_hash_map, render_pool
from app.render.requests import render_requests
from app.render.start_page import learning_path, render_start_page
from engine.lab.play.questions import BLOCK_FATES, RESET_OPTIONS, all_questions, questions_at
from engine.lab.play.scenario import scenario_names
from tests.app.conftest import parse

# The terms issue 13 asks the glossary to define.
REQUIRED_TERMS = {
    "ref_cnt": "ref_cnt",
    "null-block": "null block",
    "free-block-queue": "free_block_queue",
    "touch": "touch",
    "none-hash": "NONE_HASH",
    "extra-keys": "extra keys",
    "block-stored": "BlockStored",
    "block-removed": "BlockRemoved",
    "all-blocks-cleared": "AllBlocksCleared",
    "engine-core": "engine core",
    "preemption": "preemption",
    "chunked-prefill": "chunked prefill",
}
# And the ones issue 34 adds.
REQUIRED_TERMS |= {
    "block-hash": "block hash",
    "partial-block": "partial block",
    "hit-cap": "num_tokens - 1 cap",
    "cache-salt": "cache_salt",
    "skip-reading-prefix-cache": "skip_reading_prefix_cache",
    "prefix-cache-counters": "prefix_cache_queries / prefix_cache_hits",
    "reset-flags": "reset_running_requests / keep_running_requests",
    "hash-algo": "prefix_caching_hash_algo",
}


def every_timeline() -> list[tuple[str, str]]:
    return [(n, m) for n in timelines.names() for m in timelines.scenario(n).modes]


# -- the start page -----------------------------------------------------------------------


def test_an_address_without_a_position_opens_the_start_page() -> None:
    assert parse_link("").start and parse_link("?quiz=1").start
    for query in ("?embed=1", "?scenario=reset", "?mode=keep", "?step=2", "?scenario=nope"):
        link = parse_link(query)
        assert not link.start and link.scenario == "reset", query
    app = App(link=parse_link(""))
    assert app.start and not hasattr(app, "pool")  # no simulator is built behind it
    page = parse(app.start_page.html)
    assert page.find_all(data_testid="start-page")


def test_the_start_page_has_its_own_early_page_and_reset_has_one_too() -> None:
    pages = early_pages()
    assert pages[START_PAGE] == "" and early_page_of(parse_link("")) == START_PAGE
    assert early_page_of(parse_link("?scenario=reset")) == "reset"
    assert early_page_of(parse_link("?embed=1")) == "reset-embed"  # the write-up's figure


def test_the_path_lists_every_scenario_once_in_the_content_order() -> None:
    order = learning_path().order
    assert sorted(order) == sorted(timelines.names())
    assert order[0] == "shared-prefix" and order[-1].startswith("keep-")
    entries = parse(render_start_page(timelines.titles())).find_all(data_testid="learning-path")[0]
    items = [e for e in entries.iter() if e.tag == "li"]
    assert [e.attrs["data-scenario"] for e in items] == list(order)
    for item, name in zip(items, order, strict=True):
        link = next(e for e in item.iter() if e.tag == "a")
        assert link.attrs["href"] == f"?scenario={name}"
        assert link.text == timelines.scenario(name).title
        assert next(e for e in item.iter() if e.tag == "p").text.strip()  # what it teaches


def test_the_path_and_the_scenario_list_share_one_order() -> None:
    order = learning_path().order
    assert order.index("unaligned-prefix") < order.index("exact-duplicate")  # it relies on it
    # the header's numbered list and the picker: the flagship first, then the path's order
    assert timelines.names() == ["reset", *(n for n in order if n != "reset")]


def test_what_a_duplicate_recomputes_is_said_for_both_prompt_lengths() -> None:
    """The cap costs a block-aligned prompt a whole block, an unaligned one nothing more
    than its partial block: the start page and the narration say which is which."""
    dup = timelines.timeline("exact-duplicate", "default")
    p2 = dup.steps[4].snapshot.request("P2")  # 2,000 tokens: exactly 125 blocks
    assert p2.num_prompt_tokens % dup.block_size == 0
    assert p2.num_prompt_tokens - p2.num_cached_tokens == dup.block_size
    agent = timelines.timeline("agent-prompt", "default")
    r3 = agent.steps[6].snapshot.request("R3")  # R1 again, ending mid-block
    partial = r3.num_prompt_tokens % agent.block_size
    assert partial and r3.num_prompt_tokens - r3.num_cached_tokens == partial
    entries = parse(render_start_page(timelines.titles())).find_all(data_testid="learning-path")[0]
    item = next(e for e in entries.iter() if e.attrs.get("data-scenario") == "exact-duplicate")
    teaches = " ".join(item.text.split())
    assert "recomputes its last token" not in teaches
    assert "whole last block" in teaches and "partial block" in teaches
    logprobs = timelines.timeline("prompt-logprobs", "default")
    text = " ".join(logprobs.narration_text(logprobs.steps[6]).split())
    assert "the last full block is never a hit" not in text
    assert "fill exactly" in text and "mid-block would hit every full block" in text


def test_a_path_that_forgets_a_scenario_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import app.render.start_page as start_page

    data = {"part": [{"title": "One", "entry": [{"scenario": "reset", "teaches": "x"}]}]}
    monkeypatch.setattr(start_page, "load_toml", lambda _name: data)
    start_page.learning_path.cache_clear()
    try:
        with pytest.raises(ValueError, match="missing"):
            start_page.learning_path()
    finally:
        start_page.learning_path.cache_clear()


# -- the glossary -------------------------------------------------------------------------


def test_the_glossary_defines_every_term_the_issue_names() -> None:
    terms = glossary.glossary()
    for key, written in REQUIRED_TERMS.items():
        assert terms[key].term == written and len(terms[key].text) > 40, key
    shown = parse(glossary.render_glossary())
    anchors = [e.attrs["id"] for e in shown.iter() if e.tag == "dt"]
    assert anchors == [f"term-{key}" for key in terms]


def test_chunked_prefill_says_blocks_are_hashed_and_cached_before_they_are_computed() -> None:
    """vLLM hashes a prompt's full blocks when the Request is built, and allocate_slots
    caches a chunk's full blocks when it is scheduled, before the forward pass."""
    text = glossary.glossary()["chunked-prefill"].text
    assert "as they are computed" not in text
    assert "when it is built" in text and "before the forward pass" in text


def test_ref_cnt_counts_transfers_too_and_a_held_block_is_still_shared() -> None:
    text = glossary.glossary()["ref_cnt"].text
    assert "offload" in text and "transfer" in text  # a store touches the GPU blocks it copies
    assert "never handed out to another request" not in text
    assert "cache hit touches it" in text  # held blocks are shared through touch
    how_to = parse(render_header(timelines.timeline("reset", "keep"), 0)).text
    assert "how many requests hold it" not in how_to and "offload store" in how_to


def test_the_map_entry_says_one_key_may_hold_several_blocks_as_scenarios_show() -> None:
    text = glossary.glossary()["cached-block-hash-to-block"].text
    assert "no de-duplication" in text
    for name, mode in (("exact-duplicate", "default"), ("prompt-logprobs", "default")):
        assert name in text
        tl = timelines.timeline(name, mode)
        shared = [e for s in tl.steps for e in s.snapshot.hash_map if len(e.block_ids) > 1]
        assert shared, name
    assert "reset (default mode)" in text
    reset = timelines.timeline("reset", "default")
    assert any(len(e.block_ids) > 1 for s in reset.steps for e in s.snapshot.hash_map)


def test_the_hash_algorithms_and_their_none_hash_seeds_are_explained() -> None:
    text = glossary.glossary()["hash-algo"].text
    for algo in ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor"):
        assert algo in text
    assert "default" in text and "random" in text and "PYTHONHASHSEED" in text
    assert "attention" in glossary.glossary()["block-hash"].text  # why hashes chain


def test_a_term_is_an_escaped_link_to_its_entry() -> None:
    link = parse(glossary.term("ref_cnt", "<ref>")).children[0]
    assert link.attrs["data-term"] == "ref_cnt" and link.attrs["href"] == "#term-ref_cnt"
    assert link.text == "<ref>"  # escaped: parsed back as text, not a tag
    assert link.attrs["title"] == glossary.glossary()["ref_cnt"].text
    with pytest.raises(KeyError):
        glossary.term("no-such-term")


def linked_terms(html: str) -> set[str]:
    return {e.attrs["data-term"] for e in parse(html).with_attr("data-term")}


def test_views_link_the_terms_they_use() -> None:
    tl = timelines.timeline("reset", "keep")
    assert {"null-block", "ref_cnt"} <= linked_terms(render_pool(tl, 0))
    assert "cached-block-hash-to-block" in linked_terms(render_hash_map(tl, 0))
    assert "preemption" in linked_terms(render_requests(tl, 0))
    assert {"extra-keys", "none-hash"} <= linked_terms(render_chain(tl, 0))
    reset_step = next(i for i, s in enumerate(tl.steps) if s.label.startswith("reset_prefix"))
    assert "all-blocks-cleared" in linked_terms(render_metrics(tl, reset_step))
    stored = timelines.timeline("shared-prefix", "default")
    assert {"block-stored"} <= set().union(
        *(linked_terms(render_metrics(stored, s)) for s in range(len(stored.steps)))
    )


def test_narration_links_the_first_use_of_each_term() -> None:
    tl = timelines.timeline("preemption", "default")
    step = next(i for i, s in enumerate(tl.steps) if "preempted" in (s.result or ""))
    shown = parse(render_narration(tl, step))
    links = list(shown.with_attr("data-term"))
    keys = [e.attrs["data-term"] for e in links]
    assert "preemption" in keys and "free-block-queue" in keys
    assert len(keys) == len(set(keys))  # the first use only, not every one
    assert next(e for e in links if e.attrs["data-term"] == "preemption").text == "preempts"
    assert "R2's blocks first" in shown.text  # the rest still reads as the text, escaped


def test_linked_prose_stays_escaped() -> None:
    html = glossary.link_terms("<b>x</b> & a ref_cnt, ref_cnt; #free queue; engine cores")
    shown = parse(html)
    assert shown.text == "<b>x</b> & a ref_cnt, ref_cnt; #free queue; engine cores"
    assert [e.attrs["data-term"] for e in shown.with_attr("data-term")] == ["ref_cnt"]
    assert "<b>" not in html


def test_every_glossary_term_is_linked_where_the_page_uses_it() -> None:
    """Each vLLM term is linked somewhere on the full page, in some scenario's steps (the
    narration included: it links the first use of each term it writes)."""
    linked = linked_terms(render_header(timelines.timeline("reset", "keep"), 0))
    views = (render_pool, render_hash_map, render_requests, render_metrics, render_narration)
    for name, mode in every_timeline():
        tl = timelines.timeline(name, mode)
        for step in range(len(tl.steps)):
            for render in views:
                linked |= linked_terms(render(tl, step))
        linked |= linked_terms(render_chain(tl, len(tl.steps) - 1))
    # SGLang's terms are linked by SGLang's views (tests/app/test_sglang_render.py)
    assert linked == {k for k, t in glossary.glossary().items() if t.engine == "vllm"}


# -- predict, then see --------------------------------------------------------------------


def test_the_reset_questions_are_answered_by_the_next_step() -> None:
    answers = {}
    for mode in ("default", "preempt", "keep"):
        asked = {q.kind: q for q in questions_at(timelines.timeline("reset", mode), 0)}
        answers[mode] = {kind: q.options[q.answer] for kind, q in asked.items()}
    assert answers["default"]["reset_result"] == RESET_OPTIONS[1]  # refused: B is running
    assert answers["preempt"]["reset_result"] == RESET_OPTIONS[0]
    assert answers["keep"]["reset_result"] == RESET_OPTIONS[0]
    assert answers["default"]["block_fate"] == BLOCK_FATES[0].format(r="B")
    assert answers["preempt"]["block_fate"] == BLOCK_FATES[3]  # B preempted, cache cleared
    assert answers["keep"]["block_fate"] == BLOCK_FATES[1].format(r="B")


@pytest.mark.parametrize(("name", "mode"), every_timeline())
def test_every_answer_is_what_the_next_step_shows(name: str, mode: str) -> None:
    tl = timelines.timeline(name, mode)
    for step in range(len(tl.steps)):
        for q in questions_at(tl, step):
            assert 0 <= q.answer < len(q.options) and len(set(q.options)) == len(q.options)
            after = tl.steps[step + 1]
            right = q.options[q.answer]
            if q.kind == "reset_result":
                assert (right == RESET_OPTIONS[0]) is (after.result == "True")
                assert (right == RESET_OPTIONS[1]) is (after.result == "False")
            elif q.kind == "hit_tokens":
                hits = {r.num_cached_tokens for r in after.snapshot.requests}
                assert int(right.split()[0]) in hits
            elif q.kind == "resume_hit":
                gained = after.snapshot.stats.preempted_hits
                gained -= tl.steps[step].snapshot.stats.preempted_hits
                assert int(right.split()[0]) == gained
            elif q.kind == "next_block":
                head = tl.steps[step].snapshot.free_queue[0]
                assert right == f"#{head}" and after.snapshot.block(head).ref_cnt > 0
    assert all_questions(tl)[-1] == []  # nothing to predict after the last step


def test_hits_are_asked_where_the_lessons_are() -> None:
    dup = timelines.timeline("exact-duplicate", "default")
    hits = [q for s in range(len(dup.steps)) for q in questions_at(dup, s)]
    right = [q.options[q.answer] for q in hits if q.kind == "hit_tokens"]
    assert right == ["1984 tokens", "2000 tokens"]  # the cap, then one token more hits all


def test_a_hit_question_offers_the_answer_given_without_the_lesson() -> None:
    """A question is fair only if the tempting wrong answer is there to pick, and it asks
    for the number vLLM reports, not for tokens "found in the cache" (the hashes of a
    skipped or capped lookup are in the map, yet not reused)."""

    def hit_question(name: str, request: str, mode: str) -> tuple[str, tuple[str, ...], str]:
        tl = timelines.timeline(name, mode)
        for step in range(len(tl.steps)):
            for q in questions_at(tl, step):
                if q.kind == "hit_tokens" and q.prompt.startswith(f"{request} "):
                    return q.prompt, q.options, q.options[q.answer]
        raise AssertionError(f"no hit question for {request} in {name}")

    cases = [  # the scenario, the request, what it reuses, what a learner would say
        ("prompt-logprobs", "L1", "0 tokens", "16 tokens"),  # the lookup is skipped
        ("prepend-token", "P2", "0 tokens", "32 tokens"),  # P1's tokens, one place on
        ("exact-duplicate", "P2", "1984 tokens", "2000 tokens"),  # the cap
        ("prompt-logprobs", "P2", "16 tokens", "20 tokens"),  # L1 cached all five
        ("cache-salt", "bob-1", "0 tokens", "16 tokens"),  # what alice-2 got, other salt
        ("cache-salt", "fresh-1", "0 tokens", "16 tokens"),
        ("cache-salt", "fresh-2", "0 tokens", "16 tokens"),
        ("unaligned-prefix", "U2", "8 tokens", "10 tokens"),  # the whole shared prefix
        ("reset/keep", "C", "0 tokens", "8 tokens"),  # what the other modes give
        ("keep-aftermath/keep", "C", "0 tokens", "8 tokens"),
    ]
    for where, request, right, tempting in cases:
        name, _, mode = where.partition("/")
        prompt, options, answer = hit_question(name, request, mode or "default")
        assert answer == right and tempting in options, (name, request, options)
        assert "num_cached_tokens" in prompt and "found in" not in prompt


def test_a_resumed_request_is_asked_what_its_own_blocks_give_back() -> None:
    tl = timelines.timeline("preemption", "default")
    asked = [(s, q) for s in range(len(tl.steps)) for q in questions_at(tl, s)]
    resumed = [(s, q) for s, q in asked if q.kind == "resume_hit"]
    assert [(s, q.options[q.answer]) for s, q in resumed] == [(8, "16 tokens")]
    assert "R2" in resumed[0][1].prompt and "17" in resumed[0][1].prompt
    stats = tl.steps[9].snapshot.stats
    assert (stats.preempted_hits, stats.preempted_queries) == (16, 17)
    assert "tokens to recompute" not in resumed[0][1].prompt  # reused, not recomputed


def test_after_churn_the_resume_question_offers_the_previous_scenarios_answer() -> None:
    """In preemption R2 got its 16 tokens back; after the churn it gets less, and 16, all
    of its full blocks as if none had been evicted, is among the options."""
    tl = timelines.timeline("preemption-churn", "default")
    (q,) = [q for s in range(len(tl.steps)) for q in questions_at(tl, s) if q.kind == "resume_hit"]
    assert q.options[q.answer] == "4 tokens" and "16 tokens" in q.options


@pytest.mark.parametrize("embed", [False, True])
def test_the_quiz_holds_every_mode_and_is_off_in_the_embed(embed: bool) -> None:
    app = App(link=parse_link("?scenario=reset&mode=keep" + ("&embed=1" if embed else "")))
    panel = app.page
    assert set(app.sender.sent["questions"]) == {
        f"reset/{m}" for m in timelines.scenario("reset").modes
    }
    assert panel.compact is embed and app.page.opened["at"][0] == "reset/keep"
    app.state.scenario = "exact-duplicate"
    assert set(app.sender.sent["questions"]) == {"exact-duplicate/default"}


def test_the_lessons_say_why_hashes_chain_and_why_a_partial_block_is_not_shared() -> None:
    shared = timelines.timeline("shared-prefix", "default")
    texts = [" ".join(shared.narration_text(s).split()) for s in shared.steps]
    assert any("attention" in t and "K and V" in t for t in texts)  # the chapter's point
    assert any("partial last block" in t and "still being written" in t for t in texts)
    prepend = timelines.timeline("prepend-token", "default")
    assert any("attends" in prepend.narration_text(s) for s in prepend.steps)


def test_the_start_page_links_the_playground_and_the_lab() -> None:
    app = App(link=parse_link(""))
    page = parse(app.start_page.html)
    playground = page.find_all(data_testid="start-playground")[0].attrs["href"]
    lab = page.find_all(data_testid="start-lab")[0].attrs["href"]
    opened = App(link=parse_link(playground))
    assert store.is_playground(opened.state.scenario) and not parse_link(playground).notices
    assert (
        opened.page.editor["fields"]["script"] == "add_request A max_tokens=2 prompt: 1..12\nstep"
    )
    assert lab == f"?lab={default_preset()}" and lab_link(lab) == default_preset()


def test_the_start_page_names_both_engines_marks_sglangs_scenarios_and_links_the_traces() -> None:
    page = parse(App(link=parse_link("")).start_page.html)
    assert "SGLang" in page.find_all(data_testid="engines-note")[0].text
    marked = {
        li.attrs["data-scenario"]
        for li in page.find_all(data_testid="learning-path")[0].iter()
        if li.tag == "li" and li.find_all(data_testid="plays-on-sglang")
    }
    assert marked == set(scenario_names("sglang"))
    traces = page.find_all(data_testid="start-traces")[0]
    assert lab_link(traces.attrs["href"]) == TRACES_PRESET and traces.text == "Real traces"


def test_the_start_page_links_the_fleet() -> None:
    fleet = parse(App(link=parse_link("")).start_page.html).find_all(data_testid="start-fleet")
    assert fleet and lab_link(fleet[0].attrs["href"]) == FLEET_PRESET


@pytest.mark.parametrize("name", learning_path().order)
def test_every_scenarios_last_step_offers_the_next_one_on_the_path(name: str) -> None:
    order = learning_path().order
    app = App(link=parse_link(f"?scenario={name}"))
    for mode in app.state.timeline.modes:
        app.state.open(name, mode, 0)
        assert not parse(app.narration.html).find_all(data_testid="next-on-path")
        app.state.open(name, mode, app.state.last_step)
        offered = parse(app.narration.html).find_all(data_testid="next-on-path")
        if name == order[-1]:  # past the path: the labs and the playground
            links = [e.attrs["href"] for e in offered[0].iter() if e.tag == "a"]
            assert [lab_link(link) for link in links] == ["", TRACES_PRESET, FLEET_PRESET, None]
            assert store.is_playground(parse_link(links[3]).scenario)
            continue
        following = order[order.index(name) + 1]
        link = next(e for e in offered[0].iter() if e.tag == "a")
        assert link.attrs["href"] == f"?scenario={following}"
        assert link.text == timelines.scenario(following).title
    embed = App(link=parse_link(f"?scenario={name}&embed=1"))
    embed.state.open(name, embed.state.mode, embed.state.last_step)
    assert not parse(embed.narration.html).find_all(data_testid="next-on-path")


def test_no_page_says_seed_to_a_learner() -> None:
    """The project's seed is not a learner's word: the start page, every scenario's title,
    summary and narration, and the prefill panel name the example instead."""
    seed = re.compile(r"\bseed\b|\bseed's\b", re.IGNORECASE)
    app = App(link=parse_link(""))
    assert not seed.search(app.start_page.html)
    for name in timelines.names():
        scenario = timelines.scenario(name)
        assert not seed.search(scenario.title + scenario.summary), name
        for mode in scenario.modes:
            timeline = timelines.timeline(name, mode)
            for step in timeline.steps:
                assert not seed.search(timeline.narration_text(step)), (name, mode, step.index)
    shown = App(link=parse_link("?scenario=agent-prompt"))
    assert not seed.search(shown.prefill.html)
    assert not seed.search(shown.page.seed_label)
