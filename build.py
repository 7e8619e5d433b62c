"""Build Prefix Cache Lab as a static, fully self-hosted Pyodide site.

    python build.py                  build site/ from app/main.py
    python build.py serve [--port N] serve site/ on 127.0.0.1 (builds it first if missing)

The builder's parts are in app/static_site/; docs/static-site.md describes the site.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.static_site.assets import AssetError
from app.static_site.layout import APP_SCRIPT, INDEX_HTML, ROOT, SITE_DIR
from app.static_site.serve import serve
from app.static_site.site import build

EXIT_ASSET = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("command", nargs="?", choices=("build", "serve"), default="build")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--out", type=Path, default=ROOT / SITE_DIR, help="site folder")
    parser.add_argument("--app", type=Path, default=ROOT / APP_SCRIPT, help="Panel script")
    parser.add_argument(
        "--no-project",
        action="store_true",
        help="a stock app: no project wheel, none of the load-time measures",
    )
    args = parser.parse_args(argv)
    project = None if args.no_project else ROOT
    out = args.out.resolve()
    try:
        if args.command == "build" or not (out / INDEX_HTML).exists():
            build(args.app.resolve(), project, out)
        if args.command == "serve":
            serve(out, args.port)
    except AssetError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return EXIT_ASSET
    return 0


if __name__ == "__main__":
    sys.exit(main())
