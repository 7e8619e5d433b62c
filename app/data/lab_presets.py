"""The workload lab's default preset and the traces' page's name: what the other pages' links
into the lab need, without the lab's runners (app/data/lab.py)."""

from __future__ import annotations

from engine.lab.workload.presets import preset_names

DEFAULT_PRESET = "shared-prefix"
# The picker's choice after the workloads, `?lab=real-traces`: the traces' page
# (app/data/trace_lab.py), not a workload.
TRACES_PRESET = "real-traces"


def default_preset() -> str:
    names = preset_names()
    return DEFAULT_PRESET if DEFAULT_PRESET in names else names[0]
