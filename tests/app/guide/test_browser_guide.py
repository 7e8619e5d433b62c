"""The beginner's path in a real browser (`panel serve`): the start page, glossary links,
predict-then-see questions, and the embed as the write-up's 800x900 figure."""

from __future__ import annotations

from typing import Any

import pytest

from app.components.step_page import EMBED_STORY_TABS, EMBED_TABS
from app.data import timelines
from app.render.glossary import glossary
from app.render.start_page import learning_path
from engine.lab.play.questions import questions_at
from tests.app.page_checks import check_step, wait_for_step
from tests.app.test_browser_serve import ARTIFACTS, Watched, open_app

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.browser

EMBED_SIZE = (800, 900)
# What the figure must show without scrolling (by test id or the panel's label).
FIGURE_PANELS = ("step-counter", "narration", "pool", "free-queue", "hash-map", "requests", "log")


def test_the_start_page_lists_the_path_and_its_links_open_scenarios(
    watched: Watched, server: str
) -> None:
    page = watched.page
    page.goto(server)
    start = page.get_by_test_id("start-page")
    expect(start).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("step-counter")).to_have_count(0)  # no simulator behind it
    order = list(learning_path().order)
    items = page.locator('[data-testid="learning-path"] li[data-scenario]')
    expect(items).to_have_count(len(order))
    assert items.evaluate_all("els => els.map(e => e.dataset.scenario)") == order
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "start-1280.png"), full_page=True)

    second = order[1]
    page.get_by_role("link", name=timelines.scenario(second).title, exact=True).click()
    expect(page).to_have_url(f"{server}?scenario={second}")
    tl = timelines.timeline(second, timelines.scenario(second).modes[0])
    check_step(page, tl, 0)
    # And back to the start page from the simulator's header.
    page.get_by_test_id("start-link").click()
    expect(page.get_by_test_id("start-page")).to_be_visible(timeout=30_000)


def test_a_term_opens_its_glossary_entry(watched: Watched, server: str) -> None:
    page = open_app(watched, server, "?scenario=reset&mode=keep&step=1")
    entry = page.locator("#term-ref_cnt")
    expect(entry).not_to_be_visible()  # the glossary starts folded
    page.get_by_test_id("pool").get_by_role("link", name="ref_cnt").click()
    expect(entry).to_be_visible()
    expect(entry).to_have_class("current")
    expect(entry).to_be_focused()
    # An event's type is a term too, and the definition is its tooltip.
    events = page.get_by_test_id("events")
    cleared = events.get_by_role("link", name="AllBlocksCleared")
    expect(cleared).to_have_attribute("title", glossary()["all-blocks-cleared"].text)
    cleared.click()
    expect(page.locator("#term-all-blocks-cleared")).to_have_class("current")
    # The narration links the terms it uses too.
    page.get_by_test_id("narration").get_by_role("link", name="extra keys").click()
    expect(page.locator("#term-extra-keys")).to_have_class("current")
    check_step(page, timelines.timeline("reset", "keep"), 1)  # the page did not move


def answer(page: Any, question: Any, text: str) -> None:
    question.get_by_role("button", name=text, exact=True).click()


def test_predict_then_see_right_wrong_and_the_score_stays(fresh: Any, server: str) -> None:
    watched = fresh()
    page = open_app(watched, server, "?scenario=reset&mode=default")
    tl = timelines.timeline("reset", "default")
    asked = questions_at(tl, 0)
    questions = page.get_by_test_id("question")
    expect(questions).to_have_count(len(asked))
    result, fate = (questions.nth(i) for i in range(2))
    expect(result.locator("legend")).to_have_text(asked[0].prompt)
    answer(page, result, asked[0].options[asked[0].answer])  # right
    expect(result.get_by_test_id("verdict")).to_contain_text("Right.")
    expect(result.get_by_test_id("verdict")).to_contain_text(asked[0].explain)
    wrong = next(o for i, o in enumerate(asked[1].options) if i != asked[1].answer)
    answer(page, fate, wrong)
    expect(fate.get_by_test_id("verdict")).to_contain_text("Not quite.")
    expect(fate.get_by_role("button", name=asked[1].options[asked[1].answer])).to_have_class(
        "option right"
    )
    expect(fate.get_by_role("button", name=wrong)).to_be_disabled()
    score = page.get_by_test_id("quiz-score")
    expect(score).to_have_text("1 of 2 right")

    # Seeing it: the next step is what the answer said, and asks nothing about step 0.
    page.get_by_role("button", name="Step forward").click()
    check_step(page, tl, 1)
    expect(page.get_by_test_id("question")).to_have_count(len(questions_at(tl, 1)))
    # The score lives in the browser: a reload keeps it, and the answers given.
    page.goto(f"{server}?scenario=reset&mode=default")
    wait_for_step(page, tl, 0)
    expect(score).to_have_text("1 of 2 right")
    expect(page.get_by_test_id("verdict")).to_have_count(2)


def test_questions_can_be_switched_off_and_stay_off(fresh: Any, server: str) -> None:
    watched = fresh()
    page = open_app(watched, server, "?scenario=reset&mode=keep")
    expect(page.get_by_test_id("question")).to_have_count(2)
    page.get_by_test_id("quiz-toggle").uncheck()
    expect(page.get_by_test_id("question")).to_have_count(0)
    page.reload()
    expect(page.get_by_test_id("step-counter")).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("quiz-toggle")).not_to_be_checked()
    expect(page.get_by_test_id("question")).to_have_count(0)
    # Step forward still works, silently.
    page.get_by_role("button", name="Step forward").click()
    wait_for_step(page, timelines.timeline("reset", "keep"), 1)


@pytest.mark.parametrize("quiz", ["", "&quiz=1"])
def test_the_embed_asks_only_when_its_address_says_so(fresh: Any, server: str, quiz: str) -> None:
    watched = fresh(*EMBED_SIZE)
    page = open_app(watched, server, f"?embed=1&scenario=reset&mode=keep{quiz}")
    # The embed asks one question at a time (reset asks two here).
    expect(page.get_by_test_id("question")).to_have_count(1 if quiz else 0)
    quiz_panel = expect(page.get_by_test_id("quiz"))
    quiz_panel.to_be_visible() if quiz else quiz_panel.to_be_hidden()


def assert_figure_fits(page: Any, width: int, height: int, story: str = "narration") -> None:
    """The figure's panels in view without scrolling (`story`: the narration, or the
    question in its place)."""
    assert page.evaluate("() => document.documentElement.scrollHeight") <= height
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    overflowing = page.locator("li.cell .top").evaluate_all(
        "tops => tops.filter((top) => top.scrollWidth > top.clientWidth + 1)"
        ".map((top) => top.textContent)"
    )
    assert not overflowing, f"a pool cell's label overflows it: {overflowing}"
    for testid in (story if t == "narration" else t for t in FIGURE_PANELS):
        box = page.get_by_test_id(testid).bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= height, testid


@pytest.mark.parametrize("quiz", ["", "&quiz=1"])
@pytest.mark.parametrize("mode", timelines.scenario("reset").modes)
def test_the_embed_fits_800x900_at_every_step(
    fresh: Any, server: str, mode: str, quiz: str
) -> None:
    width, height = EMBED_SIZE
    watched = fresh(*EMBED_SIZE)
    tl = timelines.timeline("reset", mode)
    page = open_app(watched, server, f"?embed=1&scenario=reset&mode={mode}{quiz}")
    forward = page.get_by_role("button", name="Step forward")
    for step in range(len(tl.steps)):
        if step:
            forward.click()
        wait_for_step(page, tl, step)
        asked = len(questions_at(tl, step)) if quiz else 0
        for _ in range(asked):
            # A waiting question takes the narration's place, then its verdict does.
            question = page.get_by_test_id("question")
            expect(question).to_have_count(1)
            expect(page.get_by_test_id("narration")).to_be_hidden()
            assert_figure_fits(page, width, height, story="quiz")
            question.get_by_role("button").first.click()
            expect(page.get_by_test_id("verdict")).to_be_visible()
            assert_figure_fits(page, width, height, story="quiz")
        if quiz and not asked:
            expect(page.get_by_test_id("narration")).to_be_visible()
        if not asked:
            assert_figure_fits(page, width, height)
    if quiz:  # the text is one click away
        page.get_by_role("tab", name=EMBED_STORY_TABS[0]).click()
        expect(page.get_by_test_id("narration")).to_be_visible()
        assert_figure_fits(page, width, height)
    # The other panels are one click away, and then in view.
    tabs = page.get_by_role("tab")
    story = list(EMBED_STORY_TABS) if quiz else []
    expect(tabs).to_have_text([*story, *(t for t in EMBED_TABS if t != "CPU offload")])
    for label, testid in (("Code", "code-panel"), ("Metrics & events", "events")):
        page.get_by_role("tab", name=label).click()
        expect(page.get_by_test_id(testid)).to_be_visible()
        expect(page.get_by_test_id("pool")).to_be_hidden()
    page.get_by_role("tab", name="The cache").click()
    expect(page.get_by_test_id("pool")).to_be_visible()
    # A term in the figure brings the glossary's tab forward.
    page.get_by_test_id("pool").get_by_role("link", name="null block").click()
    expect(page.locator("#term-null-block")).to_be_visible()
    expect(page.get_by_role("tab", name="Glossary")).to_have_attribute("aria-selected", "true")
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_role("tab", name="The cache").click()
    page.screenshot(path=str(ARTIFACTS / f"embed-800x900-{mode}{'-quiz' if quiz else ''}.png"))
