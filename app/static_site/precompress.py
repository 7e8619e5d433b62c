"""Precompression: the wasm, the JS bundles and the lock shrink to a third or less;
wheels are zips already and stay as they are."""

from __future__ import annotations

import gzip
from pathlib import Path

GZIP_SUFFIXES = (
    ".wasm",
    ".js",
    ".mjs",
    ".json",
    ".css",
    ".html",
    ".svg",
    ".map",
    ".txt",
    ".zip",
    ".ttf",
    ".woff",
    ".ico",
)
GZIP_MIN_SAVING = 0.1  # a .gz that saves less than this share is not worth a second file


def precompress(site: Path) -> None:
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in GZIP_SUFFIXES:
            data = path.read_bytes()
            packed = gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: reproducible
            if len(packed) <= len(data) * (1 - GZIP_MIN_SAVING):
                path.with_name(path.name + ".gz").write_bytes(packed)
