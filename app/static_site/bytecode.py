"""Byte-compiling: the worker imports a few hundred modules; compiling them from
source is a large share of its start. CPython 3.12 writes the same bytecode."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from app.static_site.assets import AssetError, log, sha256_of
from app.static_site.wheels import rewrite_zip

PYC_MAGIC = "cb0d0d0a"  # CPython 3.12's bytecode magic number (3531), as Pyodide 0.27
PYC_TAG = "cpython-312"
SITE_PACKAGES = "/lib/python3.12/site-packages"
STDLIB_MOUNT = "/lib/python312.zip"  # where Pyodide puts python_stdlib.zip on sys.path
SCRIPTS = Path(__file__).parent / "scripts"  # run by another Python, as files


def run_script(
    python: str, name: str, *args: str, timeout: int, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """One of scripts/ run by ``python``, its output as text."""
    command = [python, str(SCRIPTS / name), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@functools.cache
def python312() -> str | None:
    """A CPython 3.12 whose bytecode Pyodide 0.27 loads, or None (sources only)."""
    found = [os.environ.get("PCL_PYTHON312", ""), shutil.which("python3.12") or ""]
    found += sorted(map(str, Path.home().glob(".pyenv/versions/3.12.*/bin/python3")), reverse=True)
    for candidate in filter(None, found):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            if run_script(candidate, "pyc_magic.py", timeout=60).stdout.strip() == PYC_MAGIC:
                return candidate
    log(
        "warning: no CPython 3.12 found (set PCL_PYTHON312): shipping sources only, "
        "the page will compile them on load"
    )
    return None


def compile_sources(sources: dict[str, bytes], prefix: str) -> dict[str, bytes]:
    """{path of a .py: source} -> {the same path: .pyc bytes}, by CPython 3.12."""
    python = python312()
    if python is None or not sources:
        return {}
    with tempfile.TemporaryDirectory(prefix="pcl-pyc-") as tmp:
        root = Path(tmp)
        for rel, data in sources.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        proc = run_script(python, "compile_pyc.py", tmp, prefix, timeout=600)
        if proc.returncode:
            raise AssetError(f"byte-compiling with {python} failed: {proc.stderr.strip()[-300:]}")
        return {
            rel: (root / f"{rel}c").read_bytes() for rel in sources if (root / f"{rel}c").exists()
        }


def pycache_path(rel: str) -> str:
    folder, _, name = rel.rpartition("/")
    return f"{folder}/__pycache__/{name[:-3]}.{PYC_TAG}.pyc".lstrip("/")


def imported_sources(
    app: Path, project: Path | None, lazy: tuple[str, ...] = ()
) -> frozenset[str] | None:
    """What the app imports (at start, and with the modules it imports later, ``lazy``):
    only that is compiled (the rest, rarely imported, would add bytes to the download for
    nothing). None (compile all) if the app cannot be run."""
    proc = run_app(project, "imported_modules.py", str(app), *lazy)
    if proc.returncode:
        log("warning: could not list the app's imports: compiling every module")
        return None
    return frozenset(json.loads(proc.stdout.strip().splitlines()[-1]))


def run_app(project: Path | None, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """One of scripts/ that runs the app, by this Python, with the project importable."""
    path = os.pathsep.join(filter(None, [str(project or ""), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    return run_script(sys.executable, script, *args, timeout=300, env=env)


def dataclass_code(app: Path, project: Path, stdlib: Path, lazy: tuple[str, ...]) -> bytes:
    """The methods of the app's dataclasses (at start, and in ``lazy``'s modules) as
    Pyodide's dataclasses module in ``stdlib`` (the zip with sources) writes them,
    compiled by CPython 3.12, marshalled (app/host/dataclass_code.py); empty if the app
    cannot be run so."""
    python = python312()
    listed = run_app(project, "dataclass_sources.py", str(stdlib), str(app), *lazy)
    if python is None or listed.returncode:
        log("warning: could not list the app's dataclass methods: Pyodide compiles them")
        return b""
    with tempfile.TemporaryDirectory(prefix="pcl-dataclasses-") as tmp:
        sources, out = Path(tmp) / "sources.json", Path(tmp) / "code.marshal"
        sources.write_text(listed.stdout.strip().splitlines()[-1], encoding="utf-8")
        proc = run_script(python, "compile_dataclasses.py", str(sources), str(out), timeout=300)
        if proc.returncode:
            raise AssetError(f"compiling with {python} failed: {proc.stderr.strip()[-300:]}")
        return out.read_bytes()


def precompile(
    path: Path,
    cache: Path | None,
    stdlib: bool = False,
    only: frozenset[str] | None = None,
    keep_sources: bool = False,
) -> None:
    """Add a .pyc for the modules of a zip (all, or those in `only`), in place.

    Sourceless (unless `keep_sources`): the .pyc replaces its .py,
    beside it, where both importlib and zipimport load it without a source.
    Otherwise a wheel's .pyc goes to __pycache__/ and the stdlib's beside the .py.
    The result is cached by the input and the selection, as bokeh and panel take seconds."""
    if python312() is None:
        return
    sourceless = not keep_sources
    with zipfile.ZipFile(path) as zf:
        sources = {
            n: zf.read(n)
            for n in zf.namelist()
            if n.endswith(".py") and ".dist-info/" not in n and (only is None or n in only)
        }
    selection = hashlib.sha256("\n".join(sorted(sources)).encode()).hexdigest()[:8]
    key = f"{sha256_of(path)[:16]}-{selection}-{'nopy-' if sourceless else ''}{path.name}"
    saved = cache / "compiled" / key if cache else None
    if saved is not None and zipfile.is_zipfile(saved):
        shutil.copyfile(saved, path)
        return
    pycs = compile_sources(sources, STDLIB_MOUNT if stdlib else SITE_PACKAGES)
    beside = stdlib or sourceless
    rewrite_zip(
        path,
        lambda name: not (sourceless and name in pycs),
        {f"{rel}c" if beside else pycache_path(rel): data for rel, data in pycs.items()},
    )
    if saved is not None:
        saved.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, saved)
