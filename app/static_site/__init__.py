"""The static site's builder: the app as a fully self-hosted Pyodide site in site/.

build.py is the entry point; site.py runs the parts, one job per module, in order (their
list: README.md). Nothing here runs in the browser: the site's wheel leaves this package out.
"""
