"""The overlay's run played in a process beside the server's (app/data/side_runs.py): the
same run as one played here, and a dead or stuck process costs the learner nothing
but the time it took."""

from __future__ import annotations

import asyncio
import io
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress

import pytest

import app.data.lab as lab_module
from app.data.lab import FinishedRuns, LabResult, LabRun, RunsInProgress
from app.data.side_runs import SideRuns, default_processes, serve
from engine.lab.workload.presets import load_preset
from engine.lab.workload.run import WorkloadRun
from engine.lab.workload.vllm.runner import run_workload
from engine.lab.workload.workload import Workload
from tests.app.small_lab import SMALL_KNOBS


def started(runs: SideRuns) -> SideRuns:
    """The side process started and ready (a run sent before is played here instead)."""
    runs.start()
    deadline = time.monotonic() + 30
    while not runs.ready:
        assert time.monotonic() < deadline, "the side process never said it was ready"
        time.sleep(0.01)
    return runs


@pytest.fixture
def side() -> Iterator[SideRuns]:
    runs = started(SideRuns(1))
    yield runs
    runs.close()


@contextmanager
def paused(side: SideRuns) -> Iterator[Callable[[], None]]:
    """The side process stopped (its run cannot end) until the resume it gives is called,
    or for 10 s at most: a test that fails to resume it fails rather than hangs."""
    pid = side._started[0].process.pid

    def resume() -> None:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)

    os.kill(pid, signal.SIGSTOP)
    timer = threading.Timer(10, resume)
    timer.start()
    try:
        yield resume
    finally:
        timer.cancel()
        resume()


def both_to_play(side: SideRuns, **knobs: int) -> LabRun:
    shared = load_preset("shared-prefix")
    workload = shared.workload.replace(**{**SMALL_KNOBS, **knobs})
    return LabRun(shared, workload, True, FinishedRuns(), RunsInProgress(), side=side)


def played(lab_run: LabRun) -> LabResult:
    result = asyncio.run(lab_run.play(lambda _: None))
    assert result is not None and result.compare is not None
    return result


def test_the_overlays_run_plays_beside_and_equals_a_run_played_here(side: SideRuns) -> None:
    lab_run = both_to_play(side)
    learners, overlay = lab_run.workloads
    assert [runner.workload for runner in lab_run.runners] == [learners]  # only it plays here
    result = played(lab_run)
    assert result.run == run_workload(learners)
    assert result.compare == run_workload(overlay)
    assert lab_run.finished.get(overlay) is result.compare  # kept for the next knob change


def test_the_learners_run_is_shown_first_while_the_overlays_still_plays(
    side: SideRuns,
) -> None:
    shown: list[WorkloadRun] = []
    with paused(side) as resume:  # the overlay's run cannot end before the learner's
        lab_run = both_to_play(side)

        def first(run: WorkloadRun) -> None:
            shown.append(run)
            resume()

        result = asyncio.run(lab_run.play(lambda _: None, first))
    assert result is not None and shown == [result.run]


@pytest.mark.parametrize("during", ["the learner's run", "the wait for the overlay's"])
def test_a_stop_while_the_overlay_plays_beside_ends_the_run_at_once_and_keeps_it(
    side: SideRuns, during: str
) -> None:
    """Stop does not wait for the side; the run it ends later is kept, so setting the
    knob back shows it without playing it again."""

    async def stop_then_wait() -> None:
        with paused(side) as resume:
            lab_run = both_to_play(side)

            def stop(_: object) -> None:
                lab_run.stop()

            if during == "the learner's run":
                assert await lab_run.play(stop) is None
            else:
                assert await lab_run.play(lambda _: None, stop) is None
            overlay = lab_run.workloads[1]
            assert lab_run.finished.get(overlay) is None  # (it is still playing)
            resume()
            for _ in range(1000):
                if (kept := lab_run.finished.get(overlay)) is not None:
                    break
                await asyncio.sleep(0.01)
        assert kept == run_workload(overlay)
        again = LabRun(lab_run.preset, lab_run.workloads[0], True, lab_run.finished, side=side)
        # The overlay's run known (and the learner's, if it ended): neither sent nor played.
        played_again = [runner.workload for runner in again.runners]
        assert played_again == (lab_run.workloads[:1] if during == "the learner's run" else [])
        assert again._beside is None

    asyncio.run(stop_then_wait())


def test_a_slow_side_still_reports_progress_so_stop_turns_on(side: SideRuns) -> None:
    """While the overlay's run is awaited from a side, the page still hears of the run
    (its Stop turns on after a second) and is not told it is done; Stop then ends it."""
    shares: list[float] = []
    with paused(side):
        lab_run = both_to_play(side)

        def heard(share: float) -> None:
            shares.append(share)
            if len(shares) >= 20:
                lab_run.stop()

        assert asyncio.run(lab_run.play(heard)) is None
    waited = shares[-10:]  # (the learner's run is played by then: only the side is awaited)
    assert len(shares) >= 20 and all(share == 0.5 for share in waited), shares


def test_a_side_stalled_past_the_deadline_leaves_the_run_to_be_played_here(
    side: SideRuns, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A side alive but not answering (a loaded machine, a lost message): past the deadline
    the overlay's run plays here as when the side dies, with progress and Stop; the side
    gets no new run until it answers, and its late run is kept."""
    monkeypatch.setattr(lab_module, "BESIDE_DEADLINE_S", 0.3)
    monkeypatch.setattr(lab_module, "BESIDE_DEADLINE_TIMES", 1)

    async def stalled_then_answering() -> None:
        with paused(side) as resume:
            stopped, played_here = both_to_play(side), both_to_play(side, output_tokens=3)
            assert stopped._beside is not None and played_here._beside is not None

            def stop_once_played_here(share: float) -> None:
                if share > 0.5:  # (0.5: the learner's run played, the overlay's awaited)
                    stopped.stop()

            assert await stopped.play(stop_once_played_here) is None
            assert [runner.workload for runner in stopped.runners] == stopped.workloads
            assert not side.ready  # stalled: the next runs play here
            assert both_to_play(side, output_tokens=4)._beside is None
            shares: list[float] = []
            result = await played_here.play(shares.append)
            assert result is not None
            assert [runner.workload for runner in played_here.runners] == played_here.workloads
            assert [result.run, result.compare] == [run_workload(w) for w in played_here.workloads]
            assert shares == sorted(shares) and shares[-1] == 1.0
            resume()
            overlay = stopped.workloads[1]
            for _ in range(1000):
                if side.ready and (kept := stopped.finished.get(overlay)) is not None:
                    break
                await asyncio.sleep(0.01)
        assert kept == run_workload(overlay)  # the side's run, come after the Stop
        assert both_to_play(side, output_tokens=5)._beside is not None  # answered: used again

    asyncio.run(stalled_then_answering())


def test_a_side_process_that_dies_leaves_the_run_to_be_played_here(side: SideRuns) -> None:
    process = side._started[0].process
    with paused(side):
        lab_run = both_to_play(side)
        process.kill()  # with the overlay's run sent, not answered
    result = played(lab_run)
    assert result.compare == run_workload(lab_run.workloads[1])
    assert [runner.workload for runner in lab_run.runners] == lab_run.workloads

    # A new process (started by the next ask) plays beside again once ready.
    assert both_to_play(side, output_tokens=3).runners[1:]  # the new one was not ready
    again = both_to_play(started(side), output_tokens=4)
    assert len(again.runners) == 1 and side._started[0].process is not process
    assert played(again).compare == run_workload(again.workloads[1])


def test_a_side_that_cannot_start_is_not_started_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # it ends before it is ready
    side = SideRuns(1)
    side.start()
    side._started[0].process.wait()
    deadline = time.monotonic() + 10
    while side._started[0].alive:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    side.start()
    assert side.processes == 0 and side._started == []
    assert both_to_play(side).runners[1:]  # both play here


def test_a_run_asked_for_while_it_plays_beside_is_not_sent_twice(side: SideRuns) -> None:
    workload = load_preset("fresh-salt").workload.replace(**SMALL_KNOBS)
    first, second = side.submit(workload), side.submit(workload)
    assert first is not None and first is second
    assert first.result(timeout=30) == run_workload(workload)


def test_a_busy_side_leaves_the_next_runs_to_the_app(side: SideRuns) -> None:
    workloads = [
        load_preset("fresh-salt").workload.replace(**{**SMALL_KNOBS, "output_tokens": n})
        for n in range(1, 5)
    ]
    with paused(side):
        futures = [side.submit(workload) for workload in workloads]
        assert [future is not None for future in futures] == [True, True, False, False]
    for future, workload in zip(futures[:2], workloads, strict=False):
        assert future is not None and future.result(timeout=30) == run_workload(workload)
    assert side.submit(workloads[2]) is not None  # answered: free again


def test_a_side_process_answers_each_workload_with_its_run_or_why_it_failed() -> None:
    good = load_preset("shared-prefix").workload.replace(**SMALL_KNOBS)
    bad = Workload(**{**good.knobs(), "block_size": 0})
    requests = io.BytesIO(pickle.dumps(good) + pickle.dumps(bad))
    answers = io.BytesIO()
    serve(requests, answers)
    answers.seek(0)
    assert pickle.load(answers) == ("ready", None)
    assert pickle.load(answers) == ("run", run_workload(good))
    kind, why = pickle.load(answers)
    assert kind == "failed" and "Error" in why


def test_where_there_are_no_processes_runs_play_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PCL_LAB_PROCESSES", "0")
    assert default_processes() == 0
    side = SideRuns(default_processes())
    lab_run = both_to_play(side)
    assert lab_run.runners and len(lab_run.runners) == 2
    assert side.submit(lab_run.workloads[1]) is None
    monkeypatch.setenv("PCL_LAB_PROCESSES", "9")
    assert default_processes() == 4
    monkeypatch.delenv("PCL_LAB_PROCESSES")
    assert 1 <= default_processes() <= 4
