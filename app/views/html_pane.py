"""An HTML pane whose update sends its text and nothing else.

Panel's HTML pane recomputes every property of its model on each update
(stylesheets, theme, sizing): about 4 ms per pane per step on the server. Ours
never change after the pane is built, so an update only needs the new text.
"""

from __future__ import annotations

from typing import Any

import panel as pn


class StepHTML(pn.pane.HTML):
    def _update(self, ref: str, model: Any) -> None:
        text = self._transform_object(self.object)["object"]
        if model.text != text:
            model.text = text
