"""The stepping page: one browser component that lays out and draws every view of a
scenario from one document (app/data/bundle.py) in its own HTML and CSS (step_page.js,
.css). Each part (player.js, deck_slot.js, code_panel.js, editor.js, ...) draws in a
shadow root of its own (`sheets`) from a view of this model (step_page.js's `part`).

Python holds no position: the page writes none of these parameters. It asks Python, over
one channel (requests.js), only what depends on a learner's pick: a request `{id, ask,
...}`, a reply `{id, ...}` in `reply_json` (`answer` registers who answers each `ask`;
the asks are in docs/document.md, their answers in app/views/).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import panel as pn
import param

from app.components.esm import FileComponent
from app.components.quiz import STORAGE_KEY
from app.data.url import browser_names
from app.host.errors import logged
from app.playground.fields import EDITOR_TEXT
from app.render.glossary import panel_texts
from app.render.prefill import FIELDS, seed_texts
from app.style.stylesheets import stylesheet
from engine.lab.play.scenario import SGLANG_MODES

# The page's words (content/panels.toml).
WORDS = panel_texts()["page"]
# The player (player.js): steps per second offered by the speed control, and their labels.
SPEEDS: dict[str, float] = dict(WORDS["speeds"])
# The buttons' names (the browser tests find them by name).
BUTTON_NAMES = tuple(WORDS["buttons"])
# The keys that move the player (keyboard.js), and the move of player.js's each asks for.
KEY_MOVES: dict[str, str] = {
    "ArrowLeft": "back",
    "ArrowRight": "forward",
    " ": "play",
    "Home": "restart",
    "End": "end",
}
# Each engine's name in engine/lab/play/scenario.py's ENGINES, and as the learner reads it.
ENGINE_NAMES = (("vllm", "vLLM"), ("sglang", "SGLang"))

# The full page, or the write-up's 800x900 figure (its deep dives in tabs).
PAGE, EMBED = "page", "embed"
# The embed's tabs; with `quiz=1`, its question one tab away from the narration.
EMBED_TABS, EMBED_STORY_TABS = tuple(WORDS["embed_tabs"]), tuple(WORDS["story_tabs"])
# Python's reply to a request (its `id` is added).
Answer = Callable[[Mapping[str, Any]], dict[str, Any]]


class StepPage(FileComponent):
    """The stepping page (see the module's docstring)."""

    layout: param.Selector[str] = param.Selector(objects=[PAGE, EMBED], default=PAGE, constant=True)
    quiz_in_tabs = param.Boolean(
        default=False, constant=True, doc="The embed with quiz=1: the question one tab away"
    )
    sheets = param.List(default=[], constant=True, doc="The parts' stylesheets, each once")
    part_sheets = param.Dict(
        default={}, constant=True, doc="Part -> its stylesheets, as indices into `sheets`"
    )
    editor = param.Dict(
        default={"shown": False, "fields": {}, "messages": {}, "serial": 0},
        doc="The playground's editor, from Python: shown (a playground's full page), its "
        "fields, their messages (HTML), a serial per set of fields Python writes",
    )
    editor_text = param.Dict(default=EDITOR_TEXT, constant=True, doc="Its words")
    decks = param.List(default=[], constant=True, doc="The views' names in the document")

    # The page around the controls.
    ways_html = param.String(default="", constant=True, doc="The way to the labs")
    notice_html = param.String(default="", constant=True, doc="What the address got wrong")
    fork_label = param.String(default=WORDS["fork"], constant=True)
    fork_shown = param.Boolean(default=False, doc="Edit a copy: not on a playground")
    glossary_html = param.String(default="", constant=True, doc="The glossary panel")

    reply_json = param.String(
        default="", doc="Python's reply to the browser's last request, JSON {id, ...} (requests.js)"
    )

    # The player (player.js): the position's owner.
    document_json = param.String(
        default="{}",
        doc="From Python, JSON (app/data/bundle.py, docs/document.md): every view's pages, "
        "the code and the questions of a set of timelines, and where to open it",
    )
    default_speed = param.Number(default=1.0, constant=True, doc="Steps per second")
    speeds = param.List(
        default=[list(item) for item in SPEEDS.items()], constant=True, doc="[label, steps/s]"
    )
    names = param.List(default=list(BUTTON_NAMES), constant=True, doc="The buttons' names")
    # (the skip link: the page's first tab stop, to Step forward)
    skip_text = param.String(default=WORDS["skip"], constant=True, doc="The skip link's words")
    skip_style = param.String(
        default=stylesheet("app.components", "skip_link.css"), constant=True, doc="Its CSS"
    )
    address = param.Dict(default=browser_names(), constant=True, doc="url.py's (address.js)")
    key_moves = param.Dict(default=dict(KEY_MOVES), constant=True, doc="Key -> player's move")

    # The pickers.
    scenario_options = param.List(default=[], doc="[name, title] of every built-in scenario")
    scenario_label = param.String(default=WORDS["scenario"], constant=True)
    mode_label = param.String(default=WORDS["mode"], constant=True)
    engine_label = param.String(default=WORDS["engine"], constant=True)
    engines = param.List(
        default=[list(pair) for pair in ENGINE_NAMES], constant=True, doc="[engine, name]"
    )
    sglang_modes = param.List(default=list(SGLANG_MODES), constant=True)

    # The code panel (code_panel.js).
    code_label = param.String(default=WORDS["code"], constant=True)

    # The hash chain (chain_deck.js).
    measure_label = param.String(default=WORDS["measure"], constant=True)

    # The prefill calculator (prefill_deck.js).
    prefill_labels = param.Dict(default=dict(FIELDS), constant=True, doc="Field -> its label")
    seed = param.Dict(default=seed_texts(), constant=True, doc="The agent-prompt example")
    seed_label = param.String(default=WORDS["seed"], constant=True)
    from_step_label = param.String(default=WORDS["from_step"], constant=True)

    # The questions (quiz.js).
    storage_key = param.String(default=STORAGE_KEY, constant=True)

    embed_tabs = param.List(default=list(EMBED_TABS), constant=True)
    story_tabs = param.List(default=list(EMBED_STORY_TABS), constant=True)

    _esm = "step_page.js"
    _stylesheets: ClassVar[list[str]] = [stylesheet("app.components", "step_page.css")]

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._answers: dict[str, Answer] = {}
        self._replies = 0
        self.on_msg(lambda event: self.receive(event.data))  # (model.send_msg's)

    def answer(self, ask: str, answer: Answer) -> None:
        """``answer`` replies to the browser's requests named ``ask``."""
        self._answers[ask] = answer

    @property
    def compact(self) -> bool:
        return bool(self.layout == EMBED)

    @property
    def opened(self) -> dict[str, Any]:
        """The document, read back (for tests)."""
        document: dict[str, Any] = json.loads(self.document_json)
        return document

    def request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The reply to one request of the browser's (``receive`` sends it back)."""
        answer = self._answers.get(str(request.get("ask")))
        reply = logged(answer)(request) if answer is not None else None
        if reply is None:
            reply = {"error": f"Python could not answer {str(request.get('ask'))[:40]!r}"}
        return {**reply, "id": request.get("id")}

    def receive(self, data: Any) -> None:
        """A message of the browser's: a request is answered with one reply."""
        if isinstance(data, dict) and isinstance(data.get("ask"), str):
            self._replies += 1  # (a reply like the last would not reach the browser)
            with pn.io.hold():  # the reply and what the answer changes: one message
                reply = {**self.request(data), "reply": self._replies}
                self.reply_json = json.dumps(reply, separators=(",", ":"))
