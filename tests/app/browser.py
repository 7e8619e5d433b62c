"""Shared browser plumbing: a `panel serve` of app/main.py and a headless Chromium.

Also used by benchmarks/bench_serve_click.py, so the benchmark measures the same
setup the tests check.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
READY_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def panel_serve(*serve_args: str) -> Iterator[str]:
    """Start `panel serve app/main.py` (with ``serve_args`` added) on a free port; yield
    the app's URL; stop it."""
    with panel_serve_with_output(*serve_args) as (url, _output):
        yield url


@contextlib.contextmanager
def panel_serve_with_output(*serve_args: str) -> Iterator[tuple[str, Callable[[], str]]]:
    """panel_serve, yielding also a function that reads what the server has printed so
    far (its terminal: stdout and stderr)."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "panel",
        "serve",
        "app/main.py",
        "--port",
        str(port),
        "--address",
        "127.0.0.1",
        f"--allow-websocket-origin=127.0.0.1:{port}",
        *serve_args,
    ]
    url = f"http://127.0.0.1:{port}/main"
    with tempfile.TemporaryFile() as log:
        # This checkout's packages, whichever checkout `pip install -e` last pointed at.
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        }
        process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_until_ready(process, log, url)

            def output() -> str:
                # pread: the server writes through the same file offset; leave it alone.
                fd = log.fileno()
                return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

            yield url, output
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_until_ready(process: subprocess.Popen[bytes], log: IO[bytes], url: str) -> None:
    """Poll the app's URL until it answers, for at most READY_TIMEOUT_S."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"panel serve exited:\n{log.read().decode()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"panel serve not ready after {READY_TIMEOUT_S} s")
        time.sleep(0.3)


@contextlib.contextmanager
def chromium(playwright: object, **context_options: object) -> Iterator[object]:
    """A persistent context on a fresh profile (Playwright cannot download browsers here)."""
    with tempfile.TemporaryDirectory() as profile:
        context = playwright.chromium.launch_persistent_context(  # type: ignore[attr-defined]
            profile,
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            **context_options,
        )
        try:
            yield context
        finally:
            context.close()
