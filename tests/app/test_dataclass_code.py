"""The static site's dataclass methods come from the builder's code
(app/host/dataclass_code.py): a source it recorded runs its code, compiled nowhere else;
one it did not compiles as before; without the file nothing changes."""

from __future__ import annotations

import dataclasses
import marshal
from pathlib import Path
from typing import Any

import pytest

from app.host import dataclass_code


def define() -> Any:
    @dataclasses.dataclass(frozen=True, order=True)
    class Point:
        x: int
        y: int = 0
        tags: list[str] = dataclasses.field(default_factory=list)

    return Point


def check(point: Any) -> None:
    assert point(1) == point(1, 0, []) < point(2)
    assert repr(point(1, 2, ["a"])).endswith("Point(x=1, y=2, tags=['a'])")
    with pytest.raises(dataclasses.FrozenInstanceError):
        point(1).x = 2


@pytest.fixture
def code_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The methods of ``define()``'s class as the builder ships them."""
    sources: list[str] = []

    def recording_exec(source: str, globals: Any = None, locals: Any = None) -> None:
        sources.append(source)
        exec(compile(source, "<string>", "exec", dont_inherit=True), globals, locals)

    monkeypatch.setattr(dataclasses, "exec", recording_exec, raising=False)
    define()
    codes = {s: compile(s, "<string>", "exec", dont_inherit=True) for s in sources}
    path = tmp_path / "dataclass_code.marshal"
    path.write_bytes(marshal.dumps(codes))
    monkeypatch.setattr(dataclass_code, "CODE", path)
    return path


def test_a_recorded_source_runs_the_builders_code(
    code_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataclass_code.use_compiled_dataclass_methods()

    def no_compile(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("compiled again")

    monkeypatch.setattr(dataclass_code, "compile", no_compile, raising=False)
    check(define())


def test_a_source_not_recorded_compiles_as_before(code_file: Path) -> None:
    dataclass_code.use_compiled_dataclass_methods()

    @dataclasses.dataclass
    class Other:
        name: str
        size: int = 1

    assert Other("a") == Other("a", 1) != Other("b")
    # (this module's `annotations` future makes the types strings; the generated source's
    # own names, inherited, would be the strings "__dataclass_type_name__"...)
    assert Other.__init__.__annotations__ == {"name": "str", "size": "int", "return": None}
    check(define())


def test_without_the_file_dataclasses_are_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataclass_code, "CODE", tmp_path / "missing.marshal")
    monkeypatch.delattr(dataclasses, "exec", raising=False)
    dataclass_code.use_compiled_dataclass_methods()
    assert not hasattr(dataclasses, "exec")
