"""The Mooncake request traces the workload lab's "Real traces" group replays, shipped
with the site gzipped (about 1.1 MB for both) beside their licence and README."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

from app.static_site.assets import log
from app.static_site.layout import ROOT

TRACES_DIR = "traces"  # in the site; app/lab.py fetches the traces from there
TRACE_NAMES = ("conversation", "synthetic")
TRACE_NOTES = ("LICENSE-APACHE", "README.md")
# Where the traces are read from: $PCL_TRACES_DIR, else the checkout's shared folder.
SOURCE_DIR = Path(os.environ.get("PCL_TRACES_DIR", ROOT.parent / "shared" / "traces"))


def ship_traces(stage: Path, source: Path = SOURCE_DIR) -> list[Path]:
    """Write each trace found as ``traces/NAME_trace.jsonl.gz`` (and the notes beside
    them); none found: the site's group works on a learner's own file only."""
    found = [name for name in TRACE_NAMES if (source / f"{name}_trace.jsonl").is_file()]
    if not found:
        log(f"no Mooncake traces in {source}: the site ships none")
        return []
    folder = stage / TRACES_DIR
    folder.mkdir(exist_ok=True)
    written = []
    for name in found:
        data = (source / f"{name}_trace.jsonl").read_bytes()
        path = folder / f"{name}_trace.jsonl.gz"
        path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        written.append(path)
    for note in TRACE_NOTES:
        if (source / note).is_file():
            (folder / note).write_bytes((source / note).read_bytes())
    size = sum(p.stat().st_size for p in written)
    log(f"shipping {len(written)} traces ({size / 1e6:.2f} MB gzipped)")
    return written
