"""Browser components whose ES module is a .js file beside them, local imports inlined.

Panel imports a component's module from a blob: URL, where a relative import
cannot resolve (in `panel serve` and in Pyodide alike). So each
`import { ... } from './x.js'` line of a module is replaced by the file it
names (each file once per module): the .js files stay real modules a linter can
check, and `panel serve --dev` still reloads a component when its file changes.
An `import * as name from './x.js'` line (a module whose names would clash with its
neighbours': every part of the stepping page exports `render`) becomes `const name`,
the file's text in a function of its own that returns its exports; the file's own
`import { ... }` lines are inlined before it, in the module's scope.
Lines that are only a comment are left out: every instance of a component carries its
module.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from app.components.component import AppComponent

LOCAL_IMPORT = re.compile(r"^import \{[^}]*\} from '(\.\.?/[^']+\.js)'\n", re.M)
COMMENT_LINE = re.compile(r"^[ \t]*//.*\n", re.M)
EXPORT = re.compile(r"^export (?=const |function |async function )", re.M)
NAMESPACE_IMPORT = re.compile(r"^import \* as (\w+) from '(\.\.?/[^']+\.js)'\n", re.M)
EXPORTED_NAME = re.compile(r"^export (?:const|function|async function) (\w+)", re.M)


def inline_imports(path: Path, seen: set[Path] | None = None) -> str:
    """The module at `path` with its local imports replaced by their files' text."""
    seen = set() if seen is None else seen

    def inline(match: re.Match[str]) -> str:
        if " as " in match[0]:  # (its names are inlined as they are: a rename would be lost)
            raise ValueError(f"{path.name}: a renamed import is not inlined: {match[0].strip()}")
        target = (path.parent / match[1]).resolve()
        if target in seen:
            return ""
        seen.add(target)
        return EXPORT.sub("", inline_imports(target, seen))  # (its names are the module's own)

    def namespace(match: re.Match[str]) -> str:
        target = (path.parent / match[2]).resolve()
        if target in seen:
            raise ValueError(f"{target.name} is imported twice as a namespace")
        seen.add(target)
        text = COMMENT_LINE.sub("", target.read_text(encoding="utf-8"))
        if NAMESPACE_IMPORT.search(text):
            raise ValueError(f"{target.name}: a namespace's own namespace imports are not inlined")
        shared = "".join(inline(m) for m in LOCAL_IMPORT.finditer(text))  # (the module's scope)
        body = EXPORT.sub("", LOCAL_IMPORT.sub("", text))
        names = ", ".join(EXPORTED_NAME.findall(text))
        return f"{shared}const {match[1]} = (() => {{\n{body}return {{ {names} }}\n}})()\n"

    text = COMMENT_LINE.sub("", path.read_text(encoding="utf-8"))
    return NAMESPACE_IMPORT.sub(namespace, LOCAL_IMPORT.sub(inline, text))


class FileComponent(AppComponent):
    """A JSComponent whose `_esm` names a .js file beside it, which may import local files."""

    @classmethod
    def _render_esm(cls, compiled: bool | str = True, server: bool = False) -> str:
        path = Path(inspect.getfile(cls)).parent / str(cls._esm)
        if not path.is_file():
            raise ValueError(f"{cls.__name__}._esm names no file beside {cls.__module__}")
        return inline_imports(path)
