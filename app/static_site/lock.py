"""Pyodide's lock: one entry per shipped wheel, closed under its dependencies."""

from __future__ import annotations

import email
import json
import zipfile
from pathlib import Path

from app.static_site.assets import AssetError, canonical, sha256_of
from app.static_site.pins import DROPPED_DEPENDENCIES, LAZY_DEPENDENCIES

LockPackages = dict[str, dict[str, object]]


# Environment the lock's dependency markers are evaluated in (Pyodide 0.27.7 worker).
WORKER_MARKER_ENV = {
    "python_version": "3.12",
    "python_full_version": "3.12.7",
    "os_name": "posix",
    "sys_platform": "emscripten",
    "platform_system": "Emscripten",
    "platform_machine": "wasm32",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}


def wheel_metadata(path: Path) -> tuple[str, str, list[str], list[str]]:
    """(name, version, Requires-Dist lines, top-level import names) of a wheel."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        meta = email.message_from_bytes(
            zf.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        )
    requires = [line.strip() for line in meta.get_all("Requires-Dist", [])]
    tops = set()
    for name in names:
        first, _, rest = name.partition("/")
        if first.endswith((".dist-info", ".data")):
            continue
        if rest == "__init__.py":
            tops.add(first)
        elif not rest and first.endswith(".py"):
            tops.add(first[:-3])
    return meta["Name"].strip(), meta["Version"].strip(), requires, sorted(tops)


def lock_entry(path: Path, lean: bool = True) -> dict[str, object]:
    """A wheel's entry, depending on what it requires in the worker (`lean`: not the lazy)."""
    from packaging.requirements import Requirement  # panel depends on packaging

    name, version, requires, imports = wheel_metadata(path)
    reqs = [Requirement(line) for line in requires]
    needed = {
        canonical(r.name) for r in reqs if r.marker is None or r.marker.evaluate(WORKER_MARKER_ENV)
    }
    dropped = DROPPED_DEPENDENCIES | (LAZY_DEPENDENCIES if lean else set())
    return {
        "name": name,
        "version": version,
        "file_name": path.name,
        "install_dir": "site",
        "sha256": "",  # write_lock's, of the wheel as shipped
        "package_type": "package",
        "imports": imports,
        "depends": sorted(needed - dropped),
        "unvendored_tests": False,
    }


def write_lock(pyodide_dir: Path, info: object, packages: LockPackages) -> None:
    """The lock, once every dependency it names is shipped (or micropip would ask PyPI),
    with each wheel's sha256 as shipped (slimmed, compiled)."""
    for key, entry in packages.items():
        entry["sha256"] = sha256_of(pyodide_dir / str(entry["file_name"]))
        for dep in entry["depends"]:  # type: ignore[attr-defined]
            if dep not in packages:
                raise AssetError(f"missing asset {dep} (needed by {key}): not shipped, not dropped")
    lock = {"info": info, "packages": dict(sorted(packages.items()))}
    (pyodide_dir / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))
