"""The workload lab's presets, from ``content/workloads/*.toml``: a named workload with
what to expect of it, in words filled from the runs' own figures."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.workload import Workload, WorkloadError, workload_from_knobs

# A preset's words on SGLang when its file has none of its own: the run's figures.
SGLANG_FIGURES = "{hits} hits out of {queries} queried tokens, a hit rate of {hit_rate}."


SGLANG_COMPARE_FIGURES = "Overlaid: {compare_hit_rate}."


@dataclass(frozen=True)
class Preset:
    """A named workload with what to expect, from ``content/workloads/NAME.toml``.

    ``compare`` holds the knobs of the run overlaid on the same charts (the rest
    as in ``workload``). ``expected`` (and ``compare_expected``, said only when the
    overlay ran) are texts whose ``{placeholders}`` are the runs' knobs and summary
    numbers, so every number they show is the engine's.
    """

    name: str
    title: str
    order: int
    workload: Workload
    compare: Mapping[str, Any]
    compare_label: str
    label: str
    expected: str
    compare_expected: str
    # The same on SGLang's model (the preset's ``[sglang]`` table): its own words, as
    # its tree is not vLLM's hash chain; without them, the figures only.
    sglang_expected: str = SGLANG_FIGURES
    sglang_compare_expected: str = SGLANG_COMPARE_FIGURES

    def compare_workload(self, workload: Workload | None = None) -> Workload | None:
        """The overlaid run's workload: ``workload`` (the learner's knobs) with the
        preset's comparison knobs applied; None when the preset compares nothing."""
        if not self.compare:
            return None
        return (workload or self.workload).replace(**self.compare)

    def expected_text(self, run: WorkloadRun, compare: WorkloadRun | None = None) -> str:
        """What to expect of ``run`` (and the overlaid ``compare``), in the words for the
        engine that played it."""
        if run.engine == "sglang":
            expected, compared = self.sglang_expected, self.sglang_compare_expected
        else:
            expected, compared = self.expected, self.compare_expected
        if compare is None:
            return format_expected(expected, run, None)
        return format_expected(f"{expected} {compared}", run, compare)


def format_expected(template: str, run: WorkloadRun, compare: WorkloadRun | None) -> str:
    """Fill ``{name}`` with the run's knobs and summary, ``{compare_name}`` with the overlay's."""
    values = _formatted({**run.workload.knobs(), **run.summary()})
    if compare is not None:
        overlay = _formatted({**compare.workload.knobs(), **compare.summary()})
        values.update({f"compare_{k}": v for k, v in overlay.items()})
    try:
        return " ".join(template.split()).format_map(values)
    except (KeyError, ValueError, IndexError) as error:
        raise WorkloadError("expected", f"expected text has a bad placeholder: {error}") from None


def _formatted(summary: Mapping[str, Any]) -> dict[str, str]:
    """Summary values as the texts quote them: rates as percentages, counts with commas."""
    shown: dict[str, str] = {}
    for key, value in summary.items():
        if value is None:
            shown[key] = "n/a"
        elif isinstance(value, float):
            shown[key] = f"{value:.1%}" if math.isfinite(value) else "n/a"
        elif isinstance(value, int) and not isinstance(value, bool):
            shown[key] = f"{value:,}"
        else:
            shown[key] = str(value)
    return shown


def _preset_text(name: str) -> str:
    return resources.files("content").joinpath("workloads", f"{name}.toml").read_text("utf-8")


@cache
def preset_names() -> tuple[str, ...]:
    """Every preset under content/workloads, in the order the lab lists them."""
    folder = resources.files("content").joinpath("workloads")
    names = [e.name.removesuffix(".toml") for e in folder.iterdir() if e.name.endswith(".toml")]
    order = {name: tomllib.loads(_preset_text(name)).get("order", 100) for name in names}
    return tuple(sorted(names, key=lambda name: (order[name], name)))


@cache
def load_preset(name: str) -> Preset:
    names = preset_names()
    if name not in names:
        raise WorkloadError("workload", f"unknown workload {name!r} (one of {', '.join(names)})")
    data = tomllib.loads(_preset_text(name))
    workload = workload_from_knobs(data.get("knobs", {}))
    compare = dict(data.get("compare", {}))
    sglang = dict(data.get("sglang", {}))
    if compare:
        workload.replace(**compare)  # checked now, not when the lab opens it
    return Preset(
        name=name,
        title=str(data.get("title", name)),
        order=int(data.get("order", 100)),
        workload=workload,
        compare=compare,
        compare_label=str(data.get("compare_label", "compared run")),
        label=str(data.get("label", name)),
        expected=str(data.get("expected", "")).strip(),
        compare_expected=str(data.get("compare_expected", "")).strip(),
        sglang_expected=str(sglang.get("expected", SGLANG_FIGURES)).strip(),
        sglang_compare_expected=str(sglang.get("compare_expected", SGLANG_COMPARE_FIGURES)).strip(),
    )
