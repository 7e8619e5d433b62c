"""Fetching pinned artifacts into the download cache (PCL_CACHE_DIR), checked by sha256,
and the Pyodide runtime and the wheels taken from its official distribution."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

from app.static_site.assets import AssetError, log, sha256_of
from app.static_site.lock import LockPackages
from app.static_site.pins import (
    FROM_PYODIDE_DIST,
    PYODIDE_DIST_PACKAGE,
    PYODIDE_DIST_PREFIX,
    PYODIDE_DIST_SHA256,
    PYODIDE_NPM_SHA256,
    PYODIDE_VERSION,
    SDIST_WHEELS,
)


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "prefix-cache-lab"
    path = Path(os.environ.get("PCL_CACHE_DIR") or default).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_fetch(cmd: list[str], what: str, cwd: Path) -> None:
    """Run a download command; a failure is a missing asset, not a traceback."""
    log(f"fetching {what}")
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AssetError(f"missing asset {what}: {exc}") from None
    if proc.returncode != 0:
        last = ((proc.stderr + proc.stdout).strip().splitlines() or ["no output"])[-1]
        raise AssetError(f"missing asset {what}: download failed ({last})")


def cached(path: Path, sha: str, what: str, fetch: Callable[[], None]) -> Path:
    """Return a pinned file from the cache, fetching it only when absent."""
    if not path.exists():
        fetch()
    if not path.exists():
        raise AssetError(f"missing asset {what}: not in {path.parent}")
    actual = sha256_of(path)
    if actual != sha:
        raise AssetError(
            f"corrupt asset {what}: {path} has sha256 {actual[:12]}..., pinned "
            f"{sha[:12]}... (delete it to fetch it again)"
        )
    return path


def pyodide_tarball(cache: Path) -> Path:
    target = cache / f"pyodide-{PYODIDE_VERSION}.tgz"
    what = f"pyodide@{PYODIDE_VERSION} (npm)"
    npm = ["npm", "pack", f"pyodide@{PYODIDE_VERSION}", "--silent"]
    return cached(target, PYODIDE_NPM_SHA256, what, lambda: run_fetch(npm, what, cache))


PIP_DOWNLOAD = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d"]


# PyPI's simple index (PEP 691, JSON) lists a project's files with their sha256: the
# pinned sdist is fetched as a file. `pip download` would build its metadata, and so its
# build dependencies (for pyyaml: Cython, from source under --no-binary), only to fetch it.
PYPI_SIMPLE = "https://pypi.org/simple/{name}/"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def fetch_sdist(name: str, sha: str, target: Path, what: str) -> None:
    log(f"fetching {what}")
    index = urllib.request.Request(PYPI_SIMPLE.format(name=name), headers={"Accept": SIMPLE_JSON})
    try:
        with urllib.request.urlopen(index, timeout=60) as response:
            files = json.load(response)["files"]
        url = next((f["url"] for f in files if f.get("hashes", {}).get("sha256") == sha), None)
        if url is None:
            raise AssetError(f"missing asset {what}: PyPI lists no file with the pinned sha256")
        partial = target.with_suffix(".partial")
        with urllib.request.urlopen(url, timeout=600) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out)
        partial.replace(target)
    except (OSError, ValueError, KeyError) as exc:
        raise AssetError(f"missing asset {what}: download failed ({exc})") from None


def wheel_filename(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def pip_wheels(dest: Path, pins: Mapping[str, tuple[str, str]]) -> dict[str, Path]:
    """The pinned pure wheels (name -> (version, sha256)) in ``dest``, downloading the
    missing ones in a single pip call."""
    dest.mkdir(exist_ok=True)
    paths = {n: dest / wheel_filename(n, v) for n, (v, _) in pins.items()}
    missing = [f"{n}=={pins[n][0]}" for n, p in paths.items() if not p.exists()]
    if missing:
        # Pure wheels, as Pyodide's Python takes them.
        cmd = [*PIP_DOWNLOAD, str(dest), "--only-binary=:all:", "--python-version", "3.12"]
        cmd += ["--platform", "any", "--implementation", "py", "--abi", "none", *missing]
        run_fetch(cmd, ", ".join(missing), dest)
    for name, path in paths.items():
        version, sha = pins[name]
        cached(path, sha, f"{name}=={version}", lambda: None)
    return paths


def pyodide_dist_wheel(cache: Path) -> Path:
    name, version = PYODIDE_DIST_PACKAGE
    return pip_wheels(cache, {name: (version, PYODIDE_DIST_SHA256)})[name]


def sdist_archive(cache: Path, name: str) -> Path:
    version, sha, _ = SDIST_WHEELS[name]
    dest = cache / "sdists"
    dest.mkdir(exist_ok=True)
    target = dest / f"{name}-{version}.tar.gz"
    what = f"{name}=={version} (sdist)"
    return cached(target, sha, what, lambda: fetch_sdist(name, sha, target, what))


CORE_FILES = (
    "pyodide.js",
    "pyodide.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "package.json",
)


def unpack_pyodide(cache: Path, dest: Path) -> tuple[object, LockPackages]:
    """Copy the runtime's files and the listed wasm/pure wheels out of the distribution,
    each checked against the official lock: (the lock's info, the wheels' entries)."""
    with tarfile.open(pyodide_tarball(cache)) as tf:
        for name in CORE_FILES:
            member = tf.extractfile(f"package/{name}")
            if member is None:
                raise AssetError(f"corrupt asset pyodide@{PYODIDE_VERSION}: no {name}")
            (dest / name).write_bytes(member.read())
        lock_file = tf.extractfile("package/pyodide-lock.json")
        assert lock_file is not None  # the npm package always carries its lock
        lock = json.load(lock_file)
    if lock["info"]["version"] != PYODIDE_VERSION:
        raise AssetError(f"corrupt asset pyodide@{PYODIDE_VERSION}: lock says {lock['info']}")
    taken = {}
    with zipfile.ZipFile(pyodide_dist_wheel(cache)) as zf:
        for key in FROM_PYODIDE_DIST:
            entry = lock["packages"][key]
            data = zf.read(PYODIDE_DIST_PREFIX + str(entry["file_name"]))
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise AssetError(
                    f"corrupt asset {entry['file_name']}: sha256 differs from "
                    f"the official pyodide {PYODIDE_VERSION} lock"
                )
            (dest / str(entry["file_name"])).write_bytes(data)
            taken[key] = dict(entry)
    return lock["info"], taken
