"""Record which lines of the engine's own source ran, so the code panel shows the truth.

Line events are normalised to whole statements (via ``ast``) and attributed to
the innermost enclosing ``def``. That makes the record the same on every
CPython version: 3.12 inlines comprehensions and reports some line events
differently from 3.11, but both run the same statements of the same functions.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

# The whole repo-relative path is shown to the learner, e.g. "engine/vllm/block_pool.py".
_REPO_ROOT = Path(__file__).resolve().parents[2]


def source_file(module: ModuleType) -> str:
    """The name a module's source is shown under, repo-relative: "engine/vllm/block_pool.py"."""
    path = Path(str(module.__file__)).resolve()
    try:
        return path.relative_to(_REPO_ROOT).as_posix()
    except ValueError:  # installed as a wheel: keep the package-relative path
        return f"{module.__name__.replace('.', '/')}.py"


@dataclass(frozen=True)
class FunctionSpan:
    """Where one function's source sits in its file (1-based, inclusive)."""

    qualname: str
    def_line: int  # the `def` line itself
    start_line: int  # first decorator, or the def line
    end_line: int


@dataclass(frozen=True)
class FunctionTrace:
    """One function that ran during a step and the source lines it ran."""

    file: str
    qualname: str
    start_line: int
    end_line: int
    lines: tuple[int, ...]  # every physical line of every statement that ran
    last_line: int  # first line of the last statement that ran (the "current" one)


class SourceIndex:
    """Per file: each line's statement and enclosing function."""

    def __init__(self, module: ModuleType) -> None:
        path = Path(str(module.__file__)).resolve()
        self.path = str(path)
        self.file = source_file(module)
        self.text = path.read_text(encoding="utf-8")
        tree = ast.parse(self.text)
        # line -> (statement start, statement end of the part that "runs" on that line)
        self.statement_of_line: dict[int, tuple[int, int]] = {}
        # line -> innermost enclosing function
        self.function_of_line: dict[int, FunctionSpan] = {}
        self._index(tree, prefix="")
        # line -> (its function, its statement's first line), for the lines a tracer counts
        # (not a module or class body, which runs at import time only)
        self.runs: dict[int, tuple[FunctionSpan, int]] = {
            line: (span, self.statement_of_line[line][0])
            for line, span in self.function_of_line.items()
            if line in self.statement_of_line
        }

    def _index(self, node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            qualname_prefix = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualname = f"{prefix}{child.name}"
                if isinstance(child, ast.ClassDef):
                    qualname_prefix = f"{qualname}."
                else:
                    qualname_prefix = f"{qualname}.<locals>."
                    start = min([d.lineno for d in child.decorator_list] + [child.lineno])
                    assert child.end_lineno is not None
                    span = FunctionSpan(qualname, child.lineno, start, child.end_lineno)
                    for line in range(start, child.end_lineno + 1):
                        self.function_of_line[line] = span  # inner defs overwrite later
            if isinstance(child, ast.stmt):
                self._index_statement(child)
            self._index(child, qualname_prefix)

    def _index_statement(self, stmt: ast.stmt) -> None:
        end = stmt.end_lineno or stmt.lineno
        body = getattr(stmt, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
            # A compound statement "runs" only its header (up to the end of its
            # test, iterable, signature...); its body has lines of its own.
            header_parts = [
                part
                for part in ast.iter_child_nodes(stmt)
                if not isinstance(part, ast.stmt | ast.excepthandler | ast.match_case)
            ]
            end = max([stmt.lineno] + [getattr(p, "end_lineno", None) or 0 for p in header_parts])
        for line in range(stmt.lineno, end + 1):
            self.statement_of_line[line] = (stmt.lineno, end)


# The result of a step's events by (indexes, distinct events in first-seen order, in
# last-seen order): most steps of a timeline, and of the next edit's timeline, run the
# same lines in the same order, and grouping them is most of what tracing costs after
# the line events themselves. Cleared when it grows past the bound.
_RESULTS: dict[tuple[Any, ...], tuple[FunctionTrace, ...]] = {}
_RESULTS_BOUND = 4096


class Tracer:
    """Context manager recording the engine lines that run inside it.

    Use one per step; ``result()`` gives the functions in the order first entered.
    A line event only appends (file, line): the tracer runs on every line of
    every traced step, so the grouping waits for ``result()``, which sees each
    distinct line once, and only for a sequence of lines it has not grouped before.
    """

    def __init__(self, indexes: Iterable[SourceIndex]) -> None:
        self._indexes = tuple(indexes)
        self._by_path = {index.path: index for index in self._indexes}
        self._events: list[tuple[str, int]] = []
        self._previous: Any = None

    def __enter__(self) -> Tracer:
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._previous)

    def _on_call(self, frame: FrameType, event: str, arg: object) -> Any:
        if frame.f_code.co_filename in self._by_path:
            return self._on_line
        return None

    def _on_line(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            self._events.append((frame.f_code.co_filename, frame.f_lineno))
        return self._on_line

    def result(self) -> tuple[FunctionTrace, ...]:
        # Each distinct event once: in the order first seen (which function was entered
        # first), and in the order last seen (which statement of a function ran last).
        first_seen = tuple(dict.fromkeys(self._events))
        last_seen = tuple(reversed(dict.fromkeys(reversed(self._events))))
        key = (tuple(map(id, self._indexes)), first_seen, last_seen)
        traces = _RESULTS.get(key)
        if traces is None:
            if len(_RESULTS) >= _RESULTS_BOUND:
                _RESULTS.clear()
            traces = _RESULTS[key] = self._grouped(first_seen, last_seen)
        return traces

    def _grouped(
        self, first_seen: tuple[tuple[str, int], ...], last_seen: tuple[tuple[str, int], ...]
    ) -> tuple[FunctionTrace, ...]:
        statements: dict[tuple[SourceIndex, FunctionSpan], set[int]] = {}
        for path, line in first_seen:
            index = self._by_path[path]
            run = index.runs.get(line)
            if run is not None:
                statements.setdefault((index, run[0]), set()).add(run[1])
        last: dict[tuple[SourceIndex, FunctionSpan], int] = {}
        for path, line in last_seen:
            index = self._by_path[path]
            run = index.runs.get(line)
            if run is not None:
                last[(index, run[0])] = run[1]
        traces = []
        for (index, span), starts in statements.items():
            lines: set[int] = set()
            for start in starts:
                lines.update(range(start, index.statement_of_line[start][1] + 1))
            traces.append(
                FunctionTrace(
                    file=index.file,
                    qualname=span.qualname,
                    start_line=span.start_line,
                    end_line=span.end_line,
                    lines=tuple(sorted(lines)),
                    last_line=last[(index, span)],
                )
            )
        return tuple(traces)
