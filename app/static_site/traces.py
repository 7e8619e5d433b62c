"""The Mooncake request traces the workload lab's "Real traces" group replays, shipped
with the site gzipped (about 1.1 MB for both) beside their licence and README."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from app.static_site.assets import log
from app.static_site.layout import ROOT

TRACES_DIR = "traces"  # in the site; app/data/trace_lab.py fetches the traces from there
TRACE_NAMES = ("conversation", "synthetic")
TRACE_NOTES = ("LICENSE-APACHE", "README.md")
# Where the traces are read from: $PCL_TRACES_DIR, else the repository's own copies.
SOURCE_DIR = Path(os.environ.get("PCL_TRACES_DIR", ROOT / "content" / "traces"))


def ship_traces(stage: Path, source: Path = SOURCE_DIR) -> list[Path]:
    """Write each trace found as ``traces/NAME_trace.jsonl.gz`` (and the notes beside
    them); none found: the site's group works on a learner's own file only."""
    found = {
        name: path
        for name in TRACE_NAMES
        for path in (source / f"{name}_trace.jsonl.gz", source / f"{name}_trace.jsonl")
        if path.is_file()
    }
    if not found:
        log(f"no Mooncake traces in {source}: the site ships none")
        return []
    folder = stage / TRACES_DIR
    folder.mkdir(exist_ok=True)
    written = []
    for name, source_path in found.items():
        data = source_path.read_bytes()
        if source_path.suffix != ".gz":
            data = gzip.compress(data, compresslevel=9, mtime=0)
        path = folder / f"{name}_trace.jsonl.gz"
        path.write_bytes(data)
        written.append(path)
    for note in TRACE_NOTES:
        if (source / note).is_file():
            (folder / note).write_bytes((source / note).read_bytes())
    size = sum(p.stat().st_size for p in written)
    log(f"shipping {len(written)} traces ({size / 1e6:.2f} MB gzipped)")
    return written
