"""The Pyodide runtime and the wheels taken from its official distribution."""

from __future__ import annotations

import hashlib
import json
import tarfile
import zipfile
from pathlib import Path

from app.static_site.assets import AssetError
from app.static_site.lock import LockPackages
from app.static_site.pins import FROM_PYODIDE_DIST, PYODIDE_DIST_PREFIX, PYODIDE_VERSION

CORE_FILES = (
    "pyodide.js",
    "pyodide.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "package.json",
)


def unpack_pyodide(tarball: Path, dist_whl: Path, dest: Path) -> tuple[object, LockPackages]:
    """Copy the runtime's files and the listed wasm/pure wheels out of the distribution,
    each checked against the official lock: (the lock's info, the wheels' entries)."""
    with tarfile.open(tarball) as tf:
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
    with zipfile.ZipFile(dist_whl) as zf:
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
