"""Run the app script once (as the prerender does), import the modules it imports only
for some addresses, and print the paths, as inside a wheel or the stdlib zip, of every
module imported.

    python imported_modules.py APP_SCRIPT [MODULE ...]
"""

import importlib
import json
import os
import runpy
import sys

del sys.path[0]  # this script's folder: no module of the app's comes from it
runpy.run_path(sys.argv[1])
for name in sys.argv[2:]:
    importlib.import_module(name)
bases = sorted({p.rstrip("/") for p in sys.path if p}, key=len, reverse=True)
found = set()
for module in list(sys.modules.values()):
    file = getattr(module, "__file__", None) or ""
    base = next((b for b in bases if file.startswith(b + os.sep)), None)
    if file.endswith(".py") and base:
        found.add(os.path.relpath(file, base).replace(os.sep, "/"))
print(json.dumps(sorted(found)))
