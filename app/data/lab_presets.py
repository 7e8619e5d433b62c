"""The workload lab's presets by name, and the lab's default: what the other pages' links
into the lab need, without the lab's runners (app/data/lab.py)."""

from __future__ import annotations

from engine.lab.workload.presets import preset_names

DEFAULT_PRESET = "shared-prefix"
# The picker's last choice, `?lab=real-traces`: the traces' group (app/data/trace_lab.py),
# not a workload.
TRACES_PRESET = "real-traces"


def presets() -> list[str]:
    return list(preset_names())


def default_preset() -> str:
    names = presets()
    return DEFAULT_PRESET if DEFAULT_PRESET in names else names[0]
