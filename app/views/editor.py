"""The playground editor: the learner's pool and script, checked as typed, played at once.

Every edit is read into scenario data (the ``content/scenarios`` format) and
checked by the engine. A valid one opens as the state's scenario, at the step
the learner was on when that step still exists, so every view follows; an
invalid one leaves the last valid timeline on screen and says, next to the
field, what is wrong.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import panel as pn
import param

from app.components import at_once
from app.data import timelines
from app.host.errors import logged
from app.playground import store
from app.playground.fields import (
    BLOCK_SIZE,
    LABELS,
    MAX_FIELD_CHARS,
    MESSAGES,
    NUM_GPU_BLOCKS,
    SCRIPT,
    SETUP,
    SGLANG,
    TITLE,
    field_lines,
    message_html,
    play,
    shown,
    with_engines,
)
from app.playground.script_lines import field_places
from app.playground.store import EMPTY
from app.render.editor import EDITOR_HEADING, EDITOR_HELP
from app.style.stylesheets import stylesheet
from app.style.theme import FOCUS_RING
from app.views.state import SimulatorState
from engine.lab.play import toml_writer
from engine.lab.play.scenario import ActionPlace, ScenarioError, scenario_data
from engine.lab.play.scenario_file import (
    MAX_BLOCK_SIZE,
    MAX_FILE_BYTES,
    MAX_POOL_BLOCKS,
    MIN_BLOCK_SIZE,
    MIN_POOL_BLOCKS,
    parse_toml,
)

CSS = stylesheet("app.views", "editor.css")


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


def _pool_number(text: str, field: str, low: int, high: int) -> tuple[int | None, str]:
    value = text.strip()
    if not value.isascii() or not value.isdigit() or len(value) > 9:
        return None, f"{field} must be a whole number from {low:,} to {high:,}"
    if not low <= int(value) <= high:
        return None, f"{field} must be from {low:,} to {high:,}, not {int(value):,}"
    return int(value), ""


def _numbers(data: Mapping[str, Any]) -> list[int]:
    """The script's line numbers as the field shows data loaded whole: one action a line."""
    return list(range(1, len(data.get("steps", [])) + 1))


class PlaygroundEditor(pn.viewable.Viewer):
    state = param.ClassSelector(class_=SimulatorState)

    def __init__(self, **params: object) -> None:
        super().__init__(**params)
        self._data: dict[str, Any] = {}  # the last valid data shown in the fields
        self._loading = False
        self._played = ""  # the name of the playground the fields last played
        text = {"sizing_mode": "stretch_width", "stylesheets": [CSS]}
        self.title = at_once.TextInput(label=LABELS[TITLE], **text)
        self.num_gpu_blocks = at_once.TextInput(label=LABELS[NUM_GPU_BLOCKS], width=205)
        self.block_size = at_once.TextInput(label=LABELS[BLOCK_SIZE], width=150)
        self.sglang = at_once.Checkbox(
            label=LABELS[SGLANG], margin=(5, 10), css_classes=["pg-sglang"]
        )
        self.setup = at_once.TextAreaInput(
            label=LABELS[SETUP], height=70, max_length=MAX_FIELD_CHARS, **text
        )
        self.script = at_once.TextAreaInput(
            label=LABELS[SCRIPT], height=200, max_length=MAX_FIELD_CHARS, **text
        )
        self.messages = {
            field: pn.pane.HTML("", stylesheets=[CSS], margin=(0, 10), sizing_mode="stretch_width")
            for field in MESSAGES
        }
        self.export = pn.widgets.FileDownload(
            callback=self._toml,
            filename="playground.toml",
            label="Export TOML",
            width=140,
            stylesheets=[FOCUS_RING],
        )
        self.upload = pn.widgets.FileInput(
            accept=".toml", label="Import TOML", width=220, stylesheets=[FOCUS_RING]
        )
        self.empty = pn.widgets.Button(label="Start empty", width=150, stylesheets=[FOCUS_RING])
        for widget in (self.title, self.num_gpu_blocks, self.block_size, self.setup, self.script):
            widget.param.watch(self._edited, "value_input")
        self.sglang.param.watch(self._edited, "value")
        self.upload.param.watch(self._imported, "value")
        self.empty.on_click(lambda _: self.load(EMPTY))
        self.state.param.watch(self._opened, "scenario")
        self._layout = pn.Column(
            pn.pane.HTML(EDITOR_HEADING, stylesheets=[CSS], margin=0),
            self.title,
            pn.FlexBox(  # side by side; one above the other on a phone
                pn.Column(
                    self.num_gpu_blocks, self.messages["num_gpu_blocks"], width=225, margin=0
                ),
                pn.Column(self.block_size, self.messages["block_size"], width=170, margin=0),
                gap="0 12px",
                margin=0,
            ),
            self.sglang,  # below the pool fields: beside them would not fit a phone
            self.messages["engines"],
            self.setup,
            self.messages["setup"],
            self.script,
            self.messages["script"],
            pn.pane.HTML(EDITOR_HELP, stylesheets=[CSS], margin=(0, 10)),
            pn.FlexBox(self.export, self.upload, self.empty, margin=0),  # wraps on a phone
            self.messages["file"],
            sizing_mode="stretch_width",
            css_classes=["playground"],
            stylesheets=[CSS],
            visible=store.is_playground(self.state.scenario),
        )
        self._opened()

    # -- the learner's actions ------------------------------------------------
    def open_fork(self) -> None:
        """Open the scenario on screen in the playground, at its mode and step."""
        if not store.is_playground(self.state.scenario):
            self.load(fork(self.state.scenario))

    def load(self, data: Mapping[str, Any]) -> None:
        """Show ``data`` in the fields and play it as it is (an imported file plays
        exactly as `python -m engine --file` plays it)."""
        self._show(data)
        self._play(data)

    @logged
    def _edited(self, *_: object) -> None:
        if self._loading:
            return
        collected = self._collect()
        if collected is not None:
            self._play(*collected)

    def _play(self, data: Mapping[str, Any], where: ActionPlace | None = None) -> None:
        """Play ``data``; ``where`` names its actions by their lines in the fields (by
        default, the lines the fields show for data loaded whole)."""
        places = where or field_places(None, _numbers(data))
        playground, messages = play(data, places)
        for field, text in messages.items():
            self._say(field, text)
        if playground is None:
            return
        self._data, self._played = dict(data), playground.scenario.name
        state = self.state
        if playground.scenario.name == state.scenario:
            return
        modes = timelines.modes(playground.scenario.name)
        mode, step = (state.mode if state.mode in modes else modes[0]), state.step
        with pn.io.hold():
            state.open(playground.scenario.name, mode, step)

    @logged
    def _imported(self, *_: object) -> None:
        raw = self.upload.value
        if not isinstance(raw, bytes):
            return
        try:
            if len(raw) > MAX_FILE_BYTES:
                raise ScenarioError(f"the file is larger than {MAX_FILE_BYTES:,} bytes")
            data = parse_toml(raw.decode("utf-8"))
        except UnicodeDecodeError:
            self._say("file", "Import: the file is not UTF-8 text")
            return
        except ScenarioError as error:
            self._say("file", f"Import: {error}")
            return
        self._say("file", "")
        self.load(data)

    def _toml(self) -> io.StringIO:
        return io.StringIO(toml_writer.dumps(self._data))

    # -- fields <-> data ------------------------------------------------------
    def _collect(self) -> tuple[dict[str, Any], ActionPlace] | None:
        """The fields as scenario data and its actions' lines, or None after saying what
        is wrong where."""
        blocks, blocks_error = _pool_number(
            self.num_gpu_blocks.value_input or "",
            "num_gpu_blocks",
            MIN_POOL_BLOCKS,
            MAX_POOL_BLOCKS,
        )
        size, size_error = _pool_number(
            self.block_size.value_input or "", "block_size", MIN_BLOCK_SIZE, MAX_BLOCK_SIZE
        )
        setup, setup_errors = field_lines(self.setup.value_input or "")
        steps, step_errors = field_lines(self.script.value_input or "")
        self._say("num_gpu_blocks", blocks_error)
        self._say("block_size", size_error)
        self._say("setup", "; ".join(setup_errors[:3]))
        self._say("script", "; ".join(step_errors[:3]))
        if blocks is None or size is None or setup_errors or step_errors:
            return None
        data = with_engines(
            {k: v for k, v in self._data.items() if k not in ("setup", "steps")}, self.sglang.value
        )
        data["title"] = self.title.value_input or "My scenario"
        data["pool"] = {**self._data.get("pool", {}), "num_gpu_blocks": blocks, "block_size": size}
        if setup:
            data["setup"] = [action for _, action in setup]
        data["steps"] = [action for _, action in steps]
        return data, field_places([n for n, _ in setup], [n for n, _ in steps])

    def _show(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)
        fields = shown(data)
        self._loading = True
        try:
            for widget, name in (
                (self.title, TITLE),
                (self.num_gpu_blocks, NUM_GPU_BLOCKS),
                (self.block_size, BLOCK_SIZE),
                (self.setup, SETUP),
                (self.script, SCRIPT),
            ):
                widget.param.update(value=fields[name], value_input=fields[name])
            self.sglang.value = fields[SGLANG]
        finally:
            self._loading = False
        for field in self.messages:
            self._say(field, "")

    def _say(self, field: str, text: str) -> None:
        pane = self.messages[field]
        pane.object = message_html(text)
        pane.visible = bool(text)

    @logged
    def _opened(self, *_: object) -> None:
        """The state opened a scenario: show the editor for a playground, with its data."""
        name = self.state.scenario
        self._layout.visible = store.is_playground(name)
        if not store.is_playground(name) or name == self._played:  # just played from the fields
            return
        if store.get(name).data != self._data:
            self._show(store.get(name).data)  # from an address, or Back and Forward

    def __panel__(self) -> pn.viewable.Viewable:
        return self._layout
