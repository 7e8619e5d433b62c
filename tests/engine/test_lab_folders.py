"""The engine's folders import one way, read off the import statements of every file
(at any depth, a function's own import too): the models (engine/vllm, engine/sglang)
import nothing from the lab; in the lab, shared/ imports no other folder, play/ only
shared/, no folder the command line (cli/), and the folders never import each other
in a cycle; one engine's side of a job (a `vllm` folder) never imports the other's."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "engine"
LAB = ENGINE / "lab"


def module_name(path: Path) -> str:
    parts = path.relative_to(ENGINE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module the file names in an import (``from a import b`` names a and a.b)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            assert node.level == 0, f"{path}: a relative import"
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


GRAPH = {module_name(p): imports(p) for p in sorted(ENGINE.rglob("*.py"))}


def lab_folder(module: str) -> str | None:
    """The lab's folder a module is in (engine.lab.play.vllm.snapshot -> play)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["engine", "lab"] and len(parts) > 3 else None


def folder_edges() -> dict[tuple[str, str], list[str]]:
    """(folder, folder it imports) -> the importing modules."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, names in GRAPH.items():
        source = lab_folder(module)
        for name in names:
            target = lab_folder(name)
            if source and target and target != source:
                edges.setdefault((source, target), []).append(module)
    return edges


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(f"{package}.")


def test_the_graph_is_read_from_every_folder() -> None:
    folders = {lab_folder(m) for m in GRAPH} - {None}
    assert {"shared", "play", "workload", "traces", "cli"} <= folders
    assert ("cli", "play") in folder_edges()


def test_the_models_import_nothing_from_the_lab() -> None:
    for model in ("engine.vllm", "engine.sglang"):
        named = {
            module: sorted(n for n in names if within(n, "engine.lab"))
            for module, names in GRAPH.items()
            if within(module, model)
        }
        assert named and not any(named.values()), named


def test_shared_imports_no_folder_and_play_only_shared() -> None:
    edges = folder_edges()
    assert not {edge: m for edge, m in edges.items() if edge[0] == "shared"}
    assert not {edge: m for edge, m in edges.items() if edge[0] == "play" and edge[1] != "shared"}


def test_no_folder_imports_the_command_line() -> None:
    assert not {edge: m for edge, m in folder_edges().items() if edge[1] == "cli"}


def test_the_folders_import_each_other_in_no_cycle() -> None:
    edges = folder_edges()
    reaches: dict[str, set[str]] = {}
    for source, target in edges:
        reaches.setdefault(source, set()).add(target)
    changed = True
    while changed:  # the transitive closure
        changed = False
        for targets in reaches.values():
            more = set().union(*(reaches.get(t, set()) for t in targets)) - targets
            if more:
                targets |= more
                changed = True
    cycles = sorted(folder for folder, targets in reaches.items() if folder in targets)
    assert not cycles, {edge: m for edge, m in edges.items() if set(edge) <= set(cycles)}


def test_one_engines_side_never_imports_the_others() -> None:
    def side(module: str) -> str | None:
        parts = module.split(".")[2:]  # inside the lab
        return next((p for p in parts if p in ("vllm", "sglang")), None)

    crossing = {
        module: sorted(n for n in names if within(n, "engine.lab") and side(n) not in (None, own))
        for module, names in GRAPH.items()
        if within(module, "engine.lab") and (own := side(module)) is not None
    }
    assert not any(crossing.values()), {m: n for m, n in crossing.items() if n}


def engine_side_classes() -> set[str]:
    """Every class an engine's side of a job defines (in a lab `vllm` or `sglang` folder)."""
    return {
        node.name
        for path in LAB.rglob("*.py")
        if {"vllm", "sglang"} & set(path.relative_to(LAB).parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
    }


def test_no_isinstance_tells_the_engines_apart_outside_their_sides() -> None:
    # The app and the lab ask a timeline which engine played it (`engine`), and run either
    # engine through its protocol (play/timeline.py, workload/run.py, traces/replay.py).
    classes = engine_side_classes()
    assert {"Timeline", "SGLangTimeline", "WorkloadRunner", "VLLMReplay"} <= classes
    found = []
    for root in (ENGINE.parent / "app", LAB):
        for path in root.rglob("*.py"):
            if {"vllm", "sglang"} & set(path.relative_to(ENGINE.parent).parts[:-1]):
                continue  # an engine's side may look at its own types
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                    names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                    if names & classes:
                        found.append(f"{path.relative_to(ENGINE.parent)}:{node.lineno}")
    assert not found, found
