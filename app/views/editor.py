"""The playground editor: the learner's pool and script, checked as typed, played at once.

The fields are the stepping page's (app/components/editor.js); this is their Python half.
Each edit comes as a request (`edit`, with every field's text) and is read into scenario
data (the ``content/scenarios`` format) by app/playground/fields.py and checked by the
engine. A valid one opens as the state's scenario (the page keeps its mode and step where
the new timeline has them), so every view follows; an invalid one leaves the last valid
timeline on screen, and the reply says, for each field, what is wrong. Python writes the
fields (the page's `editor`) only when it opens a playground itself: a copy to edit, an
import, Start empty, an address.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from app.data import timelines
from app.host.errors import logged
from app.playground import store
from app.playground.fields import MESSAGES, edit, message_html, play, shown
from app.playground.store import EMPTY
from app.style.stylesheets import stylesheet
from app.views.base import PagePart
from engine.lab.play import toml_writer
from engine.lab.play.scenario import ScenarioError, scenario_data
from engine.lab.play.scenario_file import MAX_FILE_BYTES, parse_toml
from engine.lab.play.script_lines import field_places

# The editor's stylesheet (editor.js draws the fields in the page's own elements).
CSS = stylesheet("app.views", "editor.css")
# What an import says of a file past a scenario file's size.
TOO_LARGE = f"the file is larger than {MAX_FILE_BYTES:,} bytes"


def fork(name: str) -> dict[str, Any]:
    """A built-in scenario as playground data: its pool, setup and script, without its
    narration (written for the scenario as it was, it would not describe edits)."""
    data = scenario_data(name)
    data.pop("narration", None)
    data.pop("order", None)
    for part in ("setup", "steps"):
        data[part] = [{k: v for k, v in a.items() if k != "say"} for a in data.get(part, [])]
    data["title"] = f"{data.get('title', name)} (playground)"
    data["summary"] = f"Your copy of the {name!r} scenario: change the pool or the script."
    return data


class PlaygroundEditor(PagePart):
    """The editor's Python half (see the module): it answers the page's `edit`, `import`,
    `export` and `empty` requests and writes the page's `editor` (shown, fields, messages)
    when it opens a playground itself. ``shown``: False in the compact layout (no editor)."""

    def __init__(self, shown: bool = True, **params: object) -> None:
        super().__init__(**params)
        self._shown = shown
        self._data: dict[str, Any] = {}  # the last valid data
        self._played = ""  # the name of the playground the fields last played
        self._serial = 0  # one per set of fields Python writes
        self.fields: dict[str, Any] = {}  # what the fields show, as Python last heard it
        self.messages: dict[str, str] = dict.fromkeys(MESSAGES, "")  # each field's, or ""
        for ask, answer in (
            ("edit", self._answer_edit),
            ("import", self._answer_import),
            ("export", self._answer_export),
            ("empty", self._answer_empty),
        ):
            self.page.answer(ask, answer)
        self.state.param.watch(self._opened, "scenario")
        self._opened()

    @property
    def shown(self) -> bool:
        """Whether the page shows the editor: on a playground, in the full layout."""
        return self._shown and store.is_playground(self.state.scenario)

    # -- the learner's actions ------------------------------------------------
    def open_fork(self) -> None:
        """Open the scenario on screen in the playground, at its mode and step."""
        if not store.is_playground(self.state.scenario):
            self.load(fork(self.state.scenario))

    def load(self, data: Mapping[str, Any]) -> None:
        """Show ``data`` in the fields and play it as it is (an imported file plays
        exactly as `python -m engine --file` plays it), its actions named by the lines the
        fields show (one action a line)."""
        self._show(data)
        places = field_places(None, list(range(1, len(data.get("steps", [])) + 1)))
        playground, messages = play(data, places)
        self.messages.update(messages)
        if playground is not None:
            self._opens(dict(data), playground)
        self._write()

    def import_file(self, raw: bytes) -> None:
        """A TOML file the learner picked: loaded and played, or its message."""
        try:
            if len(raw) > MAX_FILE_BYTES:
                raise ScenarioError(TOO_LARGE)
            data = parse_toml(raw.decode("utf-8"))
        except UnicodeDecodeError:
            self.messages["file"] = "Import: the file is not UTF-8 text"
            return
        except ScenarioError as error:
            self.messages["file"] = f"Import: {error}"
            return
        self.load(data)

    # -- the page's requests ----------------------------------------------------
    def _answer_edit(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The learner changed these fields (name -> text; `sglang` -> a bool): the
        fields played, and each field's message."""
        texts = request.get("fields")
        if not isinstance(texts, dict):
            return {"error": "No fields to play"}
        self.fields = {**self.fields, **texts}
        playground, data, messages = edit(self._data, self.fields)
        self.messages.update(messages)
        if playground is not None and data is not None:
            self._opens(data, playground)
        return {"messages": self._html(messages)}

    def _answer_import(self, request: Mapping[str, Any]) -> dict[str, Any]:
        size, data = request.get("size"), request.get("data")
        if isinstance(size, int) and size > MAX_FILE_BYTES:
            self.messages["file"] = f"Import: {TOO_LARGE}"
        elif isinstance(data, str):
            try:
                self.import_file(base64.b64decode(data, validate=True))
            except binascii.Error:
                self.messages["file"] = "Import: the file could not be read"
        return {"messages": self._html(self.messages)}

    def _answer_export(self, _request: Mapping[str, Any]) -> dict[str, Any]:
        return {"toml": toml_writer.dumps(self._data), "filename": "playground.toml"}

    def _answer_empty(self, _request: Mapping[str, Any]) -> dict[str, Any]:
        self.load(EMPTY)
        return {}

    # -- fields <-> data --------------------------------------------------------
    def _opens(self, data: dict[str, Any], playground: store.Playground) -> None:
        """The fields' playground opens as the state's scenario (its mode if it has it)."""
        self._data, self._played = data, playground.scenario.name
        state = self.state
        if playground.scenario.name == state.scenario:
            return
        modes = timelines.modes(playground.scenario.name)
        mode = state.mode if state.mode in modes else modes[0]
        state.open(playground.scenario.name, mode, state.step)

    def _show(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)
        self.fields = shown(data)
        self.messages = dict.fromkeys(MESSAGES, "")

    def _write(self) -> None:
        """What the page's editor shows: its fields anew (a new serial) and messages."""
        self._serial += 1
        self.page.editor = {
            "shown": self.shown,
            "fields": self.fields,
            "messages": self._html(self.messages),
            "serial": self._serial,
        }

    @staticmethod
    def _html(messages: Mapping[str, str]) -> dict[str, str]:
        return {field: message_html(text) for field, text in messages.items()}

    @logged
    def _opened(self, *_: object) -> None:
        """The state opened a scenario: the editor shown on a playground, with its data."""
        name = self.state.scenario
        if not self.shown:
            if self.page.editor.get("shown"):
                self._write()  # (hidden: another scenario)
            return
        if name == self._played and self.page.editor.get("shown"):
            return  # played from the fields: they show it already (the learner types on)
        if name != self._played:
            if store.get(name).data != self._data:
                self._show(store.get(name).data)  # from an address, or Back and Forward
            self._played = name
        self._write()
