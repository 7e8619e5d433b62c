"""A faithful, traced model of vLLM's v1 prefix cache, and the lab that plays it.

``engine.vllm`` is the model (vLLM's code, traced as a whole package); ``engine.lab``
turns a scenario into an immutable timeline, step by step, and holds the CLI.
Standard library only: it runs unchanged in CPython and in Pyodide.
"""
