"""The Mooncake request traces the workload lab's "Real traces" group replays, shipped
with the site gzipped (about 1.1 MB for both) beside their licence and README."""

from __future__ import annotations

import gzip
from pathlib import Path

from app.static_site.assets import log

TRACES_DIR = "traces"  # in the site; app/data/trace_lab.py fetches the traces from there
TRACE_NOTES = ("LICENSE-APACHE", "README.md")


def ship_traces(stage: Path) -> None:
    """Each trace the repository has (app/data/trace_lab.py finds it, gzipped or not) as
    traces/NAME_trace.jsonl.gz, with the notes beside them; none: the site's group works
    on a learner's own file only."""
    from app.data.trace_lab import SHIPPED_TRACES, trace_path
    from app.data.trace_lab import TRACES_DIR as SOURCE

    found = {name: path for name in SHIPPED_TRACES if (path := trace_path(name)) is not None}
    if not found:
        log(f"no Mooncake traces in {SOURCE}: the site ships none")
        return
    folder = stage / TRACES_DIR
    folder.mkdir(exist_ok=True)
    size = 0
    for name, source in found.items():
        data = source.read_bytes()
        if source.suffix != ".gz":
            data = gzip.compress(data, compresslevel=9, mtime=0)
        (folder / f"{name}_trace.jsonl.gz").write_bytes(data)
        size += len(data)
    for note in TRACE_NOTES:
        if (SOURCE / note).is_file():
            (folder / note).write_bytes((SOURCE / note).read_bytes())
    log(f"shipping {len(found)} traces ({size / 1e6:.2f} MB gzipped)")
