"""The static site's builder: the app as a fully self-hosted Pyodide site in site/.

build.py is the entry point. The parts, one job each, in the order a build runs them:
  pins        every downloaded artifact, by version and sha256
  fetch       the download cache (PCL_CACHE_DIR), filled from npm and PyPI
  runtime     the Pyodide runtime and the wheels of its official distribution
  wheels      pure wheels from sdists, and the project's own wheel
  slim        wheels without what the worker never reads
  lock        pyodide-lock.json, closed under its dependencies
  bytecode    .pyc files by CPython 3.12 (scripts/), so the worker compiles nothing
  convert     Panel's conversion of the app to a Pyodide-worker page
  early_pages the early page of every address: the app's layout and document, as data
  patches     every patch of the converted page and worker, inserting shims/
  cdn         Bokeh's and Panel's JS from the wheels; no remote reference left
  precompress a .gz twin of every compressible file
  site        the build, in that order;  serve  the site on 127.0.0.1
Nothing here runs in the browser: the site's wheel leaves this package out.
"""
