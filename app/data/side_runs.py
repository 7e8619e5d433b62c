"""Whole lab runs played beside the app's Python (a "side"): when a knob change needs both runs, the
overlay's plays there while the learner's plays in the app, and both are drawn together. A side
is a process (``python -m app.data.side_runs``, the engine only: multiprocessing would import
Panel again) or, on the static site, a Pyodide worker (``side_worker.js``), taking pickled
workloads. One not ready, dead or failing is not fatal: the run plays in the app.
``PCL_LAB_PROCESSES=0``: none."""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any

from app.host.runtime import in_pyodide
from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import Workload

# At most this many sides on a server; one core is left to the server, which plays
# the learners' own runs.
MAX_PROCESSES = 4
# A side takes a run while it has fewer than this sent and not answered: behind a
# longer queue (a workshop's knobs at once), the run is sooner played in the app.
MAX_WAITING = 2
# The folder that holds the app and engine packages, for the side process's imports.
_PROJECT = str(Path(__file__).resolve().parents[2])
# A side's messages: (READY, None) once, then (RUN, run) or (FAILED, why) per workload.
READY, RUN, FAILED = "ready", "run", "failed"


class SideRunFailed(RuntimeError):
    """The side died, or the run failed there (its message says which)."""


def _side_worker() -> Any:
    """The static site's side worker as its worker names it ({wheel, side, ...}), or None."""
    import js

    return getattr(js, "pclWheel", None)


def default_processes() -> int:
    """How many sides: ``PCL_LAB_PROCESSES`` if set; else one fewer than the cores on a server, one
    in Pyodide where the page offers it."""
    asked = os.environ.get("PCL_LAB_PROCESSES", "")
    if asked.isdigit():
        wanted = min(int(asked), MAX_PROCESSES)
    else:
        wanted = max(1, min(MAX_PROCESSES, (os.cpu_count() or 2) - 1))
    if in_pyodide():
        return min(wanted, 1) if _side_worker() is not None else 0
    return wanted


class _Side:
    """One side and the runs sent to it, answered in the order sent."""

    def __init__(self) -> None:
        self.waiting: list[Future[WorkloadRun]] = []  # sent, not answered yet
        self.ready = False
        self.alive = True
        self.stalled = False  # late with a run (LabRun's deadline): no new runs until it answers
        self._lock = threading.Lock()  # a process's answers come on its reader thread

    def send(self, workload: Workload) -> Future[WorkloadRun] | None:
        """The run's future; None when this side cannot take it."""
        future: Future[WorkloadRun] = Future()
        with self._lock:
            if not (self.alive and self.ready) or self.stalled:
                return None
            try:
                self._write(pickle.dumps(workload))
            except OSError:  # it died: the end of its answers fails what it was sent
                return None
            self.waiting.append(future)
        return future

    def _write(self, message: bytes) -> None:
        raise NotImplementedError

    def _answered(self, kind: str, answer: Any) -> None:
        if kind == READY:
            self.ready = True
            return
        with self._lock:
            if not self.waiting:
                return  # closed while it played: nobody waits for it
            future = self.waiting.pop(0)
            self.stalled = False
        if kind == RUN:
            future.set_result(answer)
        else:
            future.set_exception(SideRunFailed(answer))

    def _ended(self, why: str) -> None:
        with self._lock:
            self.alive = False
            waiting, self.waiting = self.waiting, []
        for future in waiting:
            future.set_exception(SideRunFailed(why))

    def close(self) -> None:
        self._ended("closed")


class _SideProcess(_Side):
    def __init__(self) -> None:
        super().__init__()
        path = os.pathsep.join(filter(None, [_PROJECT, os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "app.data.side_runs"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
        )
        threading.Thread(target=self._read_answers, daemon=True).start()

    def _write(self, message: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(message)
        self.process.stdin.flush()

    def _read_answers(self) -> None:
        answers = self.process.stdout
        assert answers is not None
        while True:
            try:
                # One pickle at a time: a pickle knows where it ends.
                self._answered(*pickle.load(answers))
            except Exception:  # its end, or an answer this side cannot read: fail its runs
                break
        self._ended(f"side process ended ({self.process.poll()})")

    def close(self) -> None:
        super().close()
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


class _SideWorker(_Side):
    def __init__(self) -> None:
        super().__init__()
        import js
        from pyodide.ffi import create_proxy, to_js

        where = _side_worker()
        options = to_js({"name": where.wheel}, dict_converter=js.Object.fromEntries)
        self.worker = js.Worker.new(where.side, options)
        # Kept: a proxy dropped by Python would leave the worker's handlers dangling.
        self._handlers = [
            create_proxy(lambda event: self._answered(*pickle.loads(event.data.to_bytes()))),
            create_proxy(lambda event: self._ended(f"side worker failed: {event.message}")),
        ]
        self.worker.onmessage, self.worker.onerror = self._handlers

    def _write(self, message: bytes) -> None:
        from pyodide.ffi import to_js

        self.worker.postMessage(to_js(message))

    def close(self) -> None:
        super().close()
        self.worker.terminate()


class SideRuns:
    """``processes`` sides playing whole runs; a run asked for twice gets one future."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._started: list[_Side] = []
        self._playing: dict[Workload, Future[WorkloadRun]] = {}
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the sides not started yet, and replace any that died after it was ready; never by
        ``submit``: a side's start would compete with the run."""
        with self._lock:
            # One that died before it was ready would die again: it is not replaced.
            self.processes -= sum(not (side.alive or side.ready) for side in self._started)
            self._started = [side for side in self._started if side.alive]
            while len(self._started) < self.processes:
                try:
                    self._started.append(_SideWorker() if in_pyodide() else _SideProcess())
                except Exception:  # no side here: runs play in the app
                    self.processes = len(self._started)

    @property
    def ready(self) -> bool:
        """Whether a run submitted now would play beside."""
        with self._lock:
            return any(side.alive and side.ready and not side.stalled for side in self._started)

    def submit(self, workload: Workload) -> Future[WorkloadRun] | None:
        """The future of the workload's run, played beside; None when no side is ready and free."""
        if self.processes < 1:
            return None
        with self._lock:
            future = self._playing.get(workload)
            if future is not None:
                return future
            # Only sides started and ready: a start here would compete with this run.
            for side in sorted(self._started, key=lambda side: len(side.waiting)):
                if len(side.waiting) >= MAX_WAITING:
                    return None
                future = side.send(workload)
                if future is not None:
                    break
            else:
                return None
            self._playing[workload] = future
        future.add_done_callback(lambda _: self._ended(workload, future))
        return future

    def _ended(self, workload: Workload, future: Future[WorkloadRun]) -> None:
        with self._lock:
            if self._playing.get(workload) is future:
                del self._playing[workload]

    def stalled(self, workload: Workload) -> None:
        """The workload's run is late, its side alive: neither is given to the next asks until
        that side answers."""
        with self._lock:
            future = self._playing.pop(workload, None)
            for side in self._started:
                if future in side.waiting:
                    side.stalled = True

    def close(self) -> None:
        with self._lock:
            started, self._started = self._started, []
        for side in started:
            side.close()


def played(workload: Workload) -> tuple[str, Any]:
    """A side's answer to a workload: its run, or why it failed."""
    try:
        return (RUN, run_workload(workload))
    except Exception as error:  # told to the app, which plays the run itself
        return (FAILED, f"{type(error).__name__}: {error}")


def keep_collector_off() -> None:
    """In a side: each run releases its pool, so the collector would only walk the live run."""
    gc.disable()


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """A side process's loop: ready, then a workload in, its answer out, until the end."""
    pickle.dump((READY, None), answers)
    answers.flush()
    while True:
        try:
            workload = pickle.load(requests)
        except EOFError:
            return
        pickle.dump(played(workload), answers)
        answers.flush()


def worker_ready() -> Any:
    """The side worker's READY message (shims/side_worker.js), as a Uint8Array."""
    from pyodide.ffi import to_js

    keep_collector_off()
    return to_js(pickle.dumps((READY, None)))


def worker_answer(message: Any) -> Any:
    """The side worker's answer to a message (a Uint8Array), as a Uint8Array."""
    from pyodide.ffi import to_js

    return to_js(pickle.dumps(played(pickle.loads(message.to_bytes()))))


if __name__ == "__main__":
    # The answers go on a copy of standard output; what anything prints goes to the
    # server's standard error instead of breaking them.
    answer_stream = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    keep_collector_off()
    serve(sys.stdin.buffer, answer_stream)
