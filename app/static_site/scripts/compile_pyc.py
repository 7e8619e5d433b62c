"""Run by CPython 3.12: compile every .py under a folder to <file>.pyc beside it.

    python3.12 compile_pyc.py FOLDER PREFIX

Unchecked hash-based pycs are never compared with the source's mtime, which the
install in the worker does not keep. A file that does not compile stays source only.
"""

import contextlib
import pathlib
import py_compile
import sys

root, prefix = pathlib.Path(sys.argv[1]), sys.argv[2]
for src in sorted(root.rglob("*.py")):
    rel = src.relative_to(root).as_posix()
    with contextlib.suppress(py_compile.PyCompileError):
        py_compile.compile(
            str(src),
            cfile=f"{src}c",
            dfile=f"{prefix}/{rel}",
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
