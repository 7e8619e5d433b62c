"""Records a snapshot of either engine holds: a log line, a KV-cache event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LogLine:
    level: str
    logger: str
    message: str

    def __str__(self) -> str:
        return f"{self.level} {self.logger}: {self.message}"


@dataclass(frozen=True)
class EventRecord:
    type: str
    fields: tuple[tuple[str, Any], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **dict(self.fields)}
