"""The stepping page: one browser component that lays out and draws every view of a
scenario (the header, the controls, the narration and questions, the pool, free queue,
hash map or tree, requests, log, code, metrics and events, hash chain, prefill cost,
CPU offload, glossary) from one document (app/data/bundle.py), in its own HTML and CSS
(step_page.js, step_page.css).

Each part is the module it was as a component of its own (player.js, step_deck.js,
code_panel.js, ...), given a view of this one model (step_page.js's `part`): its
parameters here carry the part's prefix where two parts share a name (`code_label`,
`prefill_labels`). Each part draws in a shadow root of its own with its own stylesheets
(`sheets`), as it did as a component. The playground's editor is a part too (editor.js):
its fields are the learner's, and Python writes them (`editor`) only when it opens a
playground itself.

Python answers what depends on a learner's pick, over one channel (requests.js): a
request `{id, ask, ...}` from the browser, a reply `{id, ...}` from Python (`answer`
registers who answers each `ask`): a large timeline's steps (`steps`), a scenario
(`pick`), an address the document does not hold (`open`), a mode it does not hold
(`mode`), a copy to edit (`fork`), a function's code (`code`), a pair in the hash chain
(`chain`), the prefill calculator (`prefill`), the hashing cost (`measure`)
(docs/document.md). The views that answer them are in app/views/. Python holds no
position: the page writes none of these parameters.
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
from app.render.prefill_inputs import FIELDS, seed_texts
from app.style.stylesheets import stylesheet
from engine.lab.play.scenario import SGLANG_MODES

# The player (player.js): steps per second offered by the speed control, and their labels.
SPEEDS: dict[str, float] = {"0.5 steps/s": 0.5, "1 step/s": 1.0, "2 steps/s": 2.0, "4 steps/s": 4.0}
DEFAULT_SPEED = 1.0
# The buttons' names (the browser tests find them by name).
RESTART, BACK, FORWARD, PLAY, PAUSE = "Restart", "Step back", "Step forward", "Play", "Pause"
BUTTON_NAMES = (RESTART, BACK, FORWARD, PLAY, PAUSE)
# The page's first tab stop (skip_link.js) takes the keyboard to Step forward.
SKIP_TEXT = "Skip to the step controls"
# The moves another control may ask the player for (position.js), and the keys that ask
# (keyboard.js).
MOVES = ("restart", "back", "forward", "end", "play")
KEY_MOVES: dict[str, str] = {
    "ArrowLeft": "back",
    "ArrowRight": "forward",
    " ": "play",
    "Home": "restart",
    "End": "end",
}
# The pickers' captions; each engine's name in engine/lab/play/scenario.py's ENGINES and
# as the learner reads it.
SCENARIO_LABEL, ENGINE_LABEL, MODE_LABEL = "Scenario", "Engine", "Mode"
ENGINE_NAMES = (("vllm", "vLLM"), ("sglang", "SGLang"))
# The code panel's function picker (code_panel.js).
PICKER_LABEL = "Functions that ran at this step (in the order entered)"
# The prefill calculator's buttons (prefill_deck.js).
SEED_LABEL = "Agent-prompt example (2,200 / 2,000)"
FROM_STEP_LABEL = "This step's request"

# The full page, or the write-up's 800x900 figure (its deep dives in tabs).
PAGE, EMBED = "page", "embed"
# The embed's tabs, in the order step_page.js lays out their panels.
EMBED_TABS = (
    "The cache",
    "Code",
    "Metrics & events",
    "Hash chain",
    "Prefill cost",
    "CPU offload",
    "Glossary",
)
# With `quiz=1`, the embed's question takes the narration's place, one tab away.
EMBED_STORY_TABS = ("This step", "Predict the next")
# Python's reply to a request (its `id` is added).
Answer = Callable[[Mapping[str, Any]], dict[str, Any]]
MEASURE_LABEL = "Measure the hashing cost here"
FORK_LABEL = "Edit a copy"


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
    fork_label = param.String(default=FORK_LABEL, constant=True)
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
    default_speed = param.Number(default=DEFAULT_SPEED, constant=True, doc="Steps per second")
    speeds = param.List(
        default=[list(item) for item in SPEEDS.items()], constant=True, doc="[label, steps/s]"
    )
    names = param.List(default=list(BUTTON_NAMES), constant=True, doc="The buttons' names")
    skip_text = param.String(default=SKIP_TEXT, constant=True, doc="The skip link's words")
    skip_style = param.String(
        default=stylesheet("app.components", "skip_link.css"), constant=True, doc="Its CSS"
    )
    address = param.Dict(default=browser_names(), constant=True, doc="url.py's (address.js)")
    key_moves = param.Dict(default=dict(KEY_MOVES), constant=True, doc="Key -> player's move")

    # The pickers.
    scenario_options = param.List(default=[], doc="[name, title] of every built-in scenario")
    scenario_label = param.String(default=SCENARIO_LABEL, constant=True)
    mode_label = param.String(default=MODE_LABEL, constant=True)
    engine_label = param.String(default=ENGINE_LABEL, constant=True)
    engines = param.List(
        default=[list(pair) for pair in ENGINE_NAMES], constant=True, doc="[engine, name]"
    )
    sglang_modes = param.List(default=list(SGLANG_MODES), constant=True)

    # The code panel (code_panel.js).
    code_label = param.String(default=PICKER_LABEL, constant=True)

    # The hash chain (chain_deck.js).
    measure_label = param.String(default=MEASURE_LABEL, constant=True)

    # The prefill calculator (prefill_deck.js).
    prefill_labels = param.Dict(default=dict(FIELDS), constant=True, doc="Field -> its label")
    seed = param.Dict(default=seed_texts(), constant=True, doc="The agent-prompt example")
    seed_label = param.String(default=SEED_LABEL, constant=True)
    from_step_label = param.String(default=FROM_STEP_LABEL, constant=True)

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
