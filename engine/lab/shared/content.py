"""Texts under content/ (questions, start page, glossary), read as the scenarios are:
from the installed package, so Pyodide finds them in the wheel."""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any


def load_toml(name: str) -> dict[str, Any]:
    return tomllib.loads(resources.files("content").joinpath(name).read_text("utf-8"))


def one_line(text: object) -> str:
    """TOML line breaks are not meaning."""
    return " ".join(str(text).split())
