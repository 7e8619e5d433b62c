"""Writing wheels: pure ones from sdists, the project's own, and slimmed ones (the
worker never reads Bokeh's or Panel's JS bundles from the wheel)."""

from __future__ import annotations

import base64
import hashlib
import tarfile
import tomllib
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from app.static_site.assets import AssetError, log
from app.static_site.fetch import sdist_archive, wheel_filename
from app.static_site.layout import NOT_SHIPPED
from app.static_site.pins import SDIST_WHEELS


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest},{len(data)}"


def write_zip(target: Path, files: dict[str, bytes]) -> Path:
    """Write {archive path: bytes} as a zip, in that order, by way of a temporary file."""
    tmp = target.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w") as zf:
        for arc, data in files.items():
            # Fixed timestamps keep the zip byte-identical across builds.
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            zf.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    tmp.replace(target)
    return target


def rewrite_zip(
    path: Path, keep: Callable[[str], bool], extra: dict[str, bytes] | None = None
) -> None:
    """The zip at ``path`` with only the files ``keep`` takes, and ``extra`` files added;
    a wheel's RECORD follows."""
    with zipfile.ZipFile(path) as zf:
        files = {name: zf.read(name) for name in zf.namelist() if keep(name)}
    files.update(extra or {})
    for name, data in files.items():
        if name.endswith(".dist-info/RECORD"):
            kept = [ln for ln in data.decode().splitlines() if ln.split(",")[0] in files]
            kept += [f"{arc},{record_hash(d)}" for arc, d in (extra or {}).items()]
            files[name] = ("\n".join(kept) + "\n").encode()
    write_zip(path, files)


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
    return write_zip(target, dict(sorted(files.items())))


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
    """{path in the wheel: bytes} of the project's packages, as the page needs them."""
    files: dict[str, bytes] = {}
    for package in packages:
        base = project / package
        if not base.is_dir():
            raise AssetError(f"missing asset project package {package!r} in {project}")
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(project).as_posix()
            if (
                path.is_file()
                and "__pycache__" not in path.parts
                and path.suffix != ".pyc"
                and not rel.startswith(NOT_SHIPPED)
            ):
                files[rel] = path.read_bytes()
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
