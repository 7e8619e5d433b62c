"""The static site's dataclass methods, compiled by the builder.

Defining a dataclass compiles the source of its methods (``__init__``, ``__repr__``...):
about 540 at the static site's start, a tenth of Python's part of it in Pyodide. The
builder runs the app with Pyodide's own dataclasses module, records each method's source
and ships its code compiled by CPython 3.12 (app/static_site/bytecode.py): the same source
compiled alike, so the same methods. A source it did not record compiles as before.
"""

from __future__ import annotations

import dataclasses
import marshal
from pathlib import Path
from types import CodeType
from typing import Any

CODE = Path(__file__).with_name("dataclass_code.marshal")  # in the site's wheel only


def use_compiled_dataclass_methods() -> None:
    """Have dataclasses take the builder's code for a source it recorded (the worker's
    shim calls this before the app's imports)."""
    if not CODE.is_file():
        return
    codes: dict[str, CodeType] = marshal.loads(CODE.read_bytes())

    def exec_compiled(source: str, globals: Any = None, locals: Any = None) -> None:
        # dont_inherit: as dataclasses compiles it, without this module's __future__ flags
        code = codes.get(source) or compile(source, "<string>", "exec", dont_inherit=True)
        exec(code, globals, locals)

    setattr(dataclasses, "exec", exec_compiled)  # noqa: B010  (its name for the builtin)
