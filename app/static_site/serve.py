"""The .gz twins of site/'s files (precompress, at build) and serving site/ on 127.0.0.1,
with a file's twin when the browser takes gzip."""

from __future__ import annotations

import contextlib
import email.utils
import functools
import gzip
import http.server
import os
from io import BytesIO
from pathlib import Path
from typing import BinaryIO

from app.static_site.layout import INDEX_HTML

# The wasm, the JS bundles and the lock shrink to a third or less; wheels are zips already
# and stay as they are.
GZIP_SUFFIXES = (
    ".wasm",
    ".js",
    ".mjs",
    ".json",
    ".css",
    ".html",
    ".svg",
    ".map",
    ".txt",
    ".zip",
    ".ttf",
    ".woff",
    ".ico",
)
GZIP_MIN_SAVING = 0.1  # a .gz that saves less than this share is not worth a second file


def precompress(site: Path) -> None:
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in GZIP_SUFFIXES:
            data = path.read_bytes()
            packed = gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: reproducible
            if len(packed) <= len(data) * (1 - GZIP_MIN_SAVING):
                path.with_name(path.name + ".gz").write_bytes(packed)


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {  # noqa: RUF012  (the base class's own attribute, extended)
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".whl": "application/zip",
        ".zip": "application/zip",
        ".json": "application/json",
    }

    def send_head(self) -> BytesIO | BinaryIO | None:
        """Send a file's .gz twin, when there is one and the browser accepts gzip."""
        path = self.translate_path(self.path)
        if os.path.isdir(path) and self.path.split("?")[0].endswith("/"):
            path = os.path.join(path, INDEX_HTML)
        twin = path + ".gz"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and os.path.isfile(path) and os.path.isfile(twin)):
            return super().send_head()
        stat = os.stat(twin)
        since = self.headers.get("If-Modified-Since")
        if since and not self.headers.get("If-None-Match"):
            with contextlib.suppress(TypeError, ValueError, IndexError, OverflowError):
                if email.utils.parsedate_to_datetime(since).timestamp() >= int(stat.st_mtime):
                    self.send_response(http.HTTPStatus.NOT_MODIFIED)
                    self.end_headers()
                    return None
        fh = open(twin, "rb")  # noqa: SIM115  (the base class closes it after copying)
        self.send_response(http.HTTPStatus.OK)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(stat.st_size))
        self.send_header("Last-Modified", self.date_time_string(int(stat.st_mtime)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        return fh

    def end_headers(self) -> None:
        # Revalidate on every load so a rebuild is never masked by a stale worker.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        if os.environ.get("PCL_SERVE_LOG"):
            super().log_message(format, *args)


def make_server(
    site: Path, port: int, handler: type[SiteHandler] = SiteHandler
) -> http.server.ThreadingHTTPServer:
    served = functools.partial(handler, directory=str(site))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), served)


def serve(site: Path, port: int) -> None:
    with make_server(site, port) as server:
        host, bound = server.server_address[:2]
        print(f"Serving {site}/ at http://{host!s}:{bound}/", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
