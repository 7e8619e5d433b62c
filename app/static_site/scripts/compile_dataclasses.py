"""Run by CPython 3.12: compile each source of a JSON list as dataclasses' exec does (no
__future__ flags inherited) and write them marshalled, as {source: code}.

    python3.12 compile_dataclasses.py SOURCES_JSON OUT
"""

import json
import marshal
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    sources = json.load(f)
codes = {s: compile(s, "<string>", "exec", dont_inherit=True) for s in sources}
with open(sys.argv[2], "wb") as f:
    marshal.dump(codes, f)
