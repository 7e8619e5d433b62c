"""Writing wheels: pure ones from sdists, and the project's own."""

from __future__ import annotations

import base64
import hashlib
import tarfile
import tomllib
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from app.static_site.assets import AssetError, log
from app.static_site.fetch import sdist_archive, wheel_filename
from app.static_site.layout import NOT_SHIPPED
from app.static_site.pins import SDIST_WHEELS


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
