"""A pinned asset: the error that names a missing or corrupt one, hashes, names."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path


class AssetError(Exception):
    """A required asset is missing or corrupt; the message names it."""


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def sha256_of(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
