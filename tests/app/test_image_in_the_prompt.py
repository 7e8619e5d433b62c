"""The image scenario on the page: every view shows a block's extra keys, and the question
before a same-text request offers the naive answer beside the right one."""

from __future__ import annotations

from app.data import timelines
from app.render.chain import render_chain
from app.render.pool import render_hash_map, render_pool
from engine.lab.play.questions import questions_at
from tests.app.conftest import parse

NAME = "image-in-the-prompt"


def test_pool_and_hash_map_show_each_cached_blocks_item_and_offset() -> None:
    tl = timelines.timeline(NAME, "default")
    step = 2  # cat-1 has computed and cached its prompt
    chain = tl.steps[step].snapshot.request("cat-1").chain
    image_hashes = {link.hash_label for link in chain if link.extra_keys}
    pool = parse(render_pool(tl, step))
    shown = {
        cell.attrs["data-hash"]: cell.text
        for cell in pool.iter()
        if cell.attrs.get("data-hash") in image_hashes
    }
    assert len(shown) == 2 and any("cat +0" in t for t in shown.values())
    assert any("cat -4" in t for t in shown.values())
    table = parse(render_hash_map(tl, step)).text
    assert "extra keys" in table and "cat +0" in table and "cat -4" in table


def test_the_chain_shows_the_item_keys_of_the_two_images() -> None:
    tl = timelines.timeline(NAME, "default")
    text = parse(render_chain(tl, 4)).text  # dog-1 admitted beside cat-1
    assert "('mm', 'dog', 0)" in text


def test_the_question_offers_the_naive_answer_and_the_next_step_decides() -> None:
    tl = timelines.timeline(NAME, "default")
    (question,) = [q for q in questions_at(tl, 3) if q.kind == "image_hit"]  # before dog-1
    assert any("the text is the same, so everything hits" in o for o in question.options)
    hit = tl.steps[4].snapshot.request("dog-1").num_cached_tokens
    assert question.options[question.answer].startswith(f"{hit} tokens: only the blocks before")
    assert not [q for q in questions_at(tl, 3) if q.kind == "hit_tokens"]  # asked once
