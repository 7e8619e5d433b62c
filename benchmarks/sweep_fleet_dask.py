"""The fleet sweep of docs/fleet.md on Dask's distributed scheduler (an optional extra:
the project does not depend on Dask). The same points as
``python -m engine --fleet --trace FILE --replicas 1 2 4 8 --router all --jobs N``, each
a task on a ``LocalCluster`` (here; a ``Client`` of an existing cluster takes the same
calls), each worker process reading and hashing the trace once for all its points.

Run: python benchmarks/sweep_fleet_dask.py [--trace FILE] [--requests N] [--workers 2]
(needs ``pip install "dask[distributed]"``; without it, says so and exits 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.lab.fleet.knobs import FleetKnobs
from engine.lab.fleet.result import ROW_COLUMNS
from engine.lab.fleet.routers import ROUTER_NAMES
from engine.lab.fleet.sweep import Source, run_point, sweep_points
from engine.lab.traces.replay import PAPER_LOCAL_CACHE_TOKENS

DEFAULT_TRACE = (
    Path(__file__).resolve().parents[1] / "content" / "traces" / "conversation_trace.jsonl.gz"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print('dask.distributed is not installed: pip install "dask[distributed]"')
        return 0
    source = Source(trace=args.trace, requests=args.requests)
    points = sweep_points(
        FleetKnobs(), list(ROUTER_NAMES), [1, 2, 4, 8], [PAPER_LOCAL_CACHE_TOKENS]
    )
    with (
        LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True) as cluster,
        Client(cluster) as client,
    ):
        futures = client.map(run_point, [source] * len(points), points, pure=False)
        runs = client.gather(futures)
    print(",".join(ROW_COLUMNS))
    for run in runs:
        print(run.csv_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
