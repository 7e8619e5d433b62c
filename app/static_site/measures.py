"""The load-time measures of the build, all on for the site.

The benchmark's yardstick (benchmarks/bench_site.py) is a stock app built without them:
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
  pages every address (the start page, each scenario in both layouts: the full page
        and `embed=1`, the write-up's iframes) has an early page (early/NAME.json.gz,
        fetched only by its addresses): the app's layout and its document, laid
        out by app/page/early_page.js before Bokeh's JS has run, so every address steps,
        switches modes and opens scenarios before Python is ready;
  playground  a playground link (which names the learner's own scenario) has an early
        page too (early/playground.json.gz: the App's layout at a playground), whose
        document the app's worker answers: it loads the project's wheel alone
        first (app/data/early_playground.py) and plays the link, a mode picked and
        each script edit while Panel and Bokeh install (needs `early`: the page talks
        to the worker it started, and `pages`).
"""

from __future__ import annotations

MEASURES = frozenset(
    {"pyc", "sourceless", "numpy", "direct", "gzip", "lean", "early", "pages", "playground"}
)
