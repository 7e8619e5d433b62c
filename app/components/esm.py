"""Browser components whose ES module is a .js file beside them, local imports inlined.

Panel imports a component's module from a blob: URL, where a relative import
cannot resolve (in `panel serve` and in Pyodide alike). So each
`import { ... } from './x.js'` line of a module is replaced by the file it
names (each file once per module): the .js files stay real modules a linter can
check, and `panel serve --dev` still reloads a component when its file changes.
Lines that are only a comment are left out: every instance of a component carries its
module.
"""

from __future__ import annotations

import re
from pathlib import Path

from app.components.component import AppComponent

LOCAL_IMPORT = re.compile(r"^import \{[^}]*\} from '(\.\.?/[^']+\.js)'\n", re.M)
COMMENT_LINE = re.compile(r"^[ \t]*//.*\n", re.M)
EXPORT = re.compile(r"^export (?=const |function |async function )", re.M)


def inline_imports(path: Path, seen: set[Path] | None = None) -> str:
    """The module at `path` with its local imports replaced by their files' text."""
    seen = set() if seen is None else seen

    def inline(match: re.Match[str]) -> str:
        target = (path.parent / match[1]).resolve()
        if target in seen:
            return ""
        seen.add(target)
        return EXPORT.sub("", inline_imports(target, seen))  # (its names are the module's own)

    return LOCAL_IMPORT.sub(inline, COMMENT_LINE.sub("", path.read_text(encoding="utf-8")))


class FileComponent(AppComponent):
    """A JSComponent whose `_esm` names a .js file beside it, which may import local files."""

    @classmethod
    def _render_esm(cls, compiled: bool | str = True, server: bool = False) -> str:
        path = cls._esm_path(compiled=False)
        if path is None:
            raise ValueError(f"{cls.__name__}._esm names no file beside {cls.__module__}")
        return inline_imports(Path(path))
