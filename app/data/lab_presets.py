"""The workload lab's default preset and the traces' and the fleet's pages' names: what the
other pages' links into the lab need, without the lab's runners (app/data/lab.py)."""

from __future__ import annotations

from engine.lab.workload.presets import preset_names

DEFAULT_PRESET = "shared-prefix"
# The picker's choice after the workloads, `?lab=real-traces`: the traces' page
# (app/data/trace_lab.py), not a workload.
TRACES_PRESET = "real-traces"
# Then `?lab=fleet`: the fleet's page (app/data/fleet_lab.py).
FLEET_PRESET = "fleet"


def default_preset() -> str:
    names = preset_names()
    return DEFAULT_PRESET if DEFAULT_PRESET in names else names[0]
