"""Run the app script (as imported_modules.py does) with Pyodide's own dataclasses module,
its source from the runtime's stdlib zip, and print, as JSON, the source of every method it
generated (this Python's own module writes them otherwise).

    python dataclass_sources.py STDLIB_ZIP APP_SCRIPT [MODULE ...]
"""

import importlib
import json
import runpy
import sys
import types
import zipfile
from typing import Any

stdlib, app, lazy = sys.argv[1], sys.argv[2], sys.argv[3:]
dataclasses = types.ModuleType("dataclasses")
sys.modules["dataclasses"] = dataclasses  # before anything imports this Python's own
with zipfile.ZipFile(stdlib) as zf:
    exec(compile(zf.read("dataclasses.py"), "dataclasses.py", "exec"), vars(dataclasses))
sources: set[str] = set()


def recording_exec(source: str, globals: Any = None, locals: Any = None) -> None:
    sources.add(source)
    exec(source, globals, locals)


# The module's name for the builtin, which it calls with each method's source.
setattr(dataclasses, "exec", recording_exec)  # noqa: B010
del sys.path[0]  # this script's folder: no module of the app's comes from it
runpy.run_path(app)
for name in lazy:
    importlib.import_module(name)
print(json.dumps(sorted(sources)))
