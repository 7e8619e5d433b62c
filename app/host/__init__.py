"""The process the app runs in: a server's CPython or Pyodide, its garbage collector, and
the logging of callbacks."""
