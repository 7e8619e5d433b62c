"""The build: the runtime, the wheels, the converted page and its patches, in site/.

`build` runs every part in order, with every load-time measure (docs/static-site.md)
when it ships a project's wheel; without one, a stock app: the benchmark's yardstick
(benchmarks/bench_site.py), a plain converted app (no .pyc, numpy whole, micropip, every
package installed, no early start or early pages, no .gz twins).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from app.static_site.assets import AssetError, canonical, log
from app.static_site.bytecode import dataclass_code, imported_sources, precompile, python312
from app.static_site.cdn import check_self_hosted, copy_bokeh_js, copy_panel_dist
from app.static_site.convert import convert, lock_names
from app.static_site.early_pages import write_early_pages
from app.static_site.fetch import cache_dir, pip_wheels, unpack_pyodide
from app.static_site.layout import DATACLASS_CODE, INDEX_HTML, LAZY_IMPORTS
from app.static_site.lock import LockPackages, lock_entry, write_lock
from app.static_site.patches import SIDE_WORKER, patch_html, patch_worker, shim
from app.static_site.pins import PURE_WHEELS, SDIST_WHEELS
from app.static_site.serve import precompress
from app.static_site.traces import ship_traces
from app.static_site.wheels import SLIMMERS, project_wheel, rewrite_zip, sdist_pure_wheel


def build(app: Path, project: Path | None, out: Path) -> None:
    """Build the site of `app` in `out`, all or nothing: with `project`'s wheel, or (None)
    as a stock app."""
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
    # site/pyodide/: the runtime and every wheel (raw: the pure ones, unslimmed).
    pyodide_dir = stage / "pyodide"
    info, packages = unpack_pyodide(cache, pyodide_dir)
    raw = pip_wheels(cache / "wheels", PURE_WHEELS)
    built = {name: sdist_pure_wheel(cache, name) for name in SDIST_WHEELS}
    for name, path in {**raw, **built}.items():
        shutil.copyfile(path, pyodide_dir / path.name)
        packages[name] = lock_entry(pyodide_dir / path.name, lean=project is not None)
    for key, entry in packages.items():
        keep = SLIMMERS.get(key) if key != "numpy" or project else None  # stock: numpy whole
        if keep is not None:  # (the lock's imports and depends stay as they are)
            rewrite_zip(pyodide_dir / str(entry["file_name"]), keep)
    log(f"converting {app}")
    # Every address has its early page: none needs Panel's pre-render of a Bokeh document.
    convert(app, stage, prerender=project is None)
    locked = None if project is None else ship_project(app, project, cache, pyodide_dir, packages)
    write_lock(pyodide_dir, info, packages)
    converted = stage / f"{app.stem}.html"
    html = patch_html(converted.read_text(), app.stem, early=project is not None)
    if project is not None:
        log(f"writing {app}'s early page at every address")
        write_early_pages(stage)
        ship_traces(stage)
        (stage / SIDE_WORKER).write_text(shim("install_locked.js") + shim(SIDE_WORKER))
    converted.unlink()
    (stage / INDEX_HTML).write_text(html)
    worker = stage / f"{app.stem}.js"
    worker.write_text(patch_worker(worker.read_text(), locked))
    copy_bokeh_js(raw["bokeh"], html, stage)
    copy_panel_dist(raw["panel"], html, stage)
    check_self_hosted(stage)
    if project is not None:
        precompress(stage)


def ship_project(
    app: Path, project: Path, cache: Path, pyodide_dir: Path, packages: LockPackages
) -> tuple[list[str], str]:
    """The project's wheel in the lock, depending on what the app needs, and every wheel
    compiled to what the app imports: (the lock's names the worker installs, the wheel)."""
    wheel, meta = project_wheel(project, pyodide_dir)
    # Changes with every edit (not worth caching); keeps its sources: the code panel shows
    # the engine's own source.
    precompile(wheel, None, keep_sources=True)
    install = lock_names(meta, packages)
    if python312() is not None:
        # What the app imports, in the stdlib and in each wheel, sourceless.
        only = imported_sources(app, project, LAZY_IMPORTS)
        stdlib = pyodide_dir / "python_stdlib.zip"
        code = dataclass_code(app, project, stdlib, LAZY_IMPORTS)  # (before it is sourceless)
        rewrite_zip(wheel, lambda _name: True, {DATACLASS_CODE: code} if code else {})
        precompile(stdlib, cache, stdlib=True, only=only)
        for entry in packages.values():
            precompile(pyodide_dir / str(entry["file_name"]), cache, only=only)
    entry = lock_entry(wheel)
    key = canonical(str(entry["name"]))
    packages[key] = {**entry, "depends": [n for n in install if n != key]}
    return install, f"./pyodide/{wheel.name}"
