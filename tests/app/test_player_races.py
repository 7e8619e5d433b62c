"""The player (app/components/player.js) alone in Chromium, on a model of its own: Python's
answers arrive exactly when a test says, so the races of a real page are played on purpose.

A document Python sends may arrive after the learner moved: the player must open it where
the learner is, not where the request was made.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.components.step_page import BUTTON_NAMES, SPEEDS
from app.data.url import browser_names
from tests.app.browser import chromium

playwright_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.browser]

COMPONENTS = Path(__file__).resolve().parents[2] / "app" / "components"
ORIGIN = "http://pcl.test"
# The page: the player rendered on a model whose requests wait until the test answers.
PAGE = """<!doctype html><html><body><div id="bar"></div><script type="module">
import { render } from './player.js'
import { ask } from './position.js'
const handlers = {}
const model = {
  ...%(values)s,
  on(name, callback) { (handlers[name] ||= []).push(callback) },
  ask(request) { window.asked.push(request); return new Promise(() => {}) },
}
window.asked = []
window.pcl = {
  ask,
  python(document) {  // Python writes a new document
    model.document_json = JSON.stringify(document)
    for (const callback of handlers.document_json || []) { callback() }
  },
  where() { let at = null; ask({ reply: (p) => { at = [p.key, p.step] } }); return at },
}
document.getElementById('bar').append(render({ model }))
</script></body></html>"""


def document(serial: int, at: list[Any], lasts: dict[str, int | None]) -> dict[str, Any]:
    """A playground's document (docs/document.md): every mode it has played held whole."""
    return {
        "version": 1,
        "serial": serial,
        "at": at,
        "lasts": lasts,
        "held": {key: [0, last + 1] for key, last in lasts.items() if last is not None},
        "queries": {key: {"scenario": "playground", "mode": key.split("/")[1]} for key in lasts},
        "views": {},
        "keep": False,
    }


@pytest.fixture(scope="module")
def context() -> Iterator[Any]:
    with playwright_api.sync_playwright() as playwright, chromium(playwright) as context:
        yield context


@pytest.fixture
def player(context: Any) -> Iterator[Any]:
    """A page with the player alone, its first document: a playground at default step 5,
    its `keep` mode not played yet."""
    values = {
        "names": list(BUTTON_NAMES),
        "speeds": [list(item) for item in SPEEDS.items()],
        "default_speed": 1.0,
        "address": browser_names(),
        "skip_text": "Skip",
        "skip_style": "",
        "document_json": json.dumps(
            document(1, ["pg/default", 5], {"pg/default": 9, "pg/keep": None})
        ),
    }

    def serve(route: Any) -> None:
        name = route.request.url.removeprefix(ORIGIN + "/").split("?")[0]
        if name == "":
            route.fulfill(body=PAGE % {"values": json.dumps(values)}, content_type="text/html")
        elif (COMPONENTS / name).is_file():
            body = (COMPONENTS / name).read_text(encoding="utf-8")
            route.fulfill(body=body, content_type="text/javascript")
        else:
            route.fulfill(status=404)

    page = context.new_page()
    page.route(ORIGIN + "/**", serve)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(ORIGIN + "/?scenario=playground&mode=default&step=5")
    page.wait_for_function("() => window.pcl !== undefined")
    yield page
    page.close()
    assert errors == []


def test_a_modes_document_that_comes_after_a_move_opens_at_the_learners_step(player: Any) -> None:
    """Keep picked at step 5 (Python plays it), Restart while it comes: keep opens at 0."""
    assert player.evaluate("pcl.where()") == ["pg/default", 5]
    player.evaluate("pcl.ask({ mode: 'keep' })")
    assert player.evaluate("asked") == [{"ask": "mode", "mode": "keep", "step": 5}]
    player.evaluate("pcl.ask({ move: 'restart' })")
    assert player.evaluate("pcl.where()") == ["pg/default", 0]
    keep = document(2, ["pg/keep", 5], {"pg/default": 9, "pg/keep": 7})
    player.evaluate(f"pcl.python({json.dumps(keep)})")
    assert player.evaluate("pcl.where()") == ["pg/keep", 0]
    assert player.get_by_text("Step 0 / 7").is_visible()


def test_a_modes_document_opens_at_the_step_asked_when_the_learner_stayed(player: Any) -> None:
    """The same, no move meanwhile: keep opens at step 5, where the learner was."""
    player.evaluate("pcl.ask({ mode: 'keep' })")
    keep = document(2, ["pg/keep", 5], {"pg/default": 9, "pg/keep": 7})
    player.evaluate(f"pcl.python({json.dumps(keep)})")
    assert player.evaluate("pcl.where()") == ["pg/keep", 5]


def test_a_scenarios_document_opens_at_its_own_position(player: Any) -> None:
    """A document Python was asked for elsewhere (a scenario picked): at its `at`, whatever
    step the learner moved to meanwhile."""
    player.evaluate("pcl.ask({ scenario: 'lora-adapter' })")
    assert player.evaluate("asked") == [{"ask": "pick", "name": "lora-adapter"}]
    player.evaluate("pcl.ask({ move: 'forward' })")
    other = document(2, ["lora-adapter/default", 2], {"lora-adapter/default": 4})
    player.evaluate(f"pcl.python({json.dumps(other)})")
    assert player.evaluate("pcl.where()") == ["lora-adapter/default", 2]
