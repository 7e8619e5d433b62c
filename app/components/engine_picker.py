"""The engine picker (vLLM, SGLang), in the browser, beside the mode picker.

A scenario that plays on both engines has both engines' timelines in the player's
bundle (app/data/timelines.py). Picking the other engine asks the player (player.js) for
that engine's timeline at the same step: its mode last shown in this scenario, else
its first; the mode picker then shows that engine's modes. It works on the static
site before Python is ready, like the mode picker, and hides itself on a scenario
that plays on one engine (its bundle holds one engine's timelines).
"""

from __future__ import annotations

import param

from app.components.esm import FileComponent
from engine.lab.play.scenario import SGLANG_MODES

LABEL = "Engine"
# Each engine's name in engine/lab/play/scenario.py's ENGINES and as the learner reads it.
ENGINE_NAMES = (("vllm", "vLLM"), ("sglang", "SGLang"))


class EnginePicker(FileComponent):
    label = param.String(default=LABEL, constant=True, doc="The group's caption")
    engines = param.List(
        default=[list(pair) for pair in ENGINE_NAMES], constant=True, doc="[engine, name]"
    )
    sglang_modes = param.List(
        default=list(SGLANG_MODES), constant=True, doc="The modes that play on SGLang"
    )

    _esm = "engine_picker.js"
