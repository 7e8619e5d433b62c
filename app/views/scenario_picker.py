"""The scenario picker: a native select, by title.

With Python live, a pick goes to Python, which builds the scenario's timelines.
Before Python is ready (the static site's pre-rendered copy, early_steps.py) a
pick opens the scenario's address instead: every scenario has a pre-rendered copy
of its own (build.py), so the new page steps at once while Python starts again.
"""

from __future__ import annotations

import json

import param

from app.early_steps import EARLY_ATTRIBUTE, EARLY_CLASS
from app.views.step_deck import LeanComponent

LABEL = "Scenario"

_ESM = """
const LABEL = __LABEL__
const WORKS_EARLY = __WORKS_EARLY__
const EARLY = __EARLY__

export function render({ model }) {
  const label = document.createElement('label')
  label.className = 'scenario-picker'
  label.setAttribute(WORKS_EARLY, '')  // works before Python (early_steps.py)
  const caption = document.createElement('span')
  caption.textContent = LABEL
  const select = document.createElement('select')
  label.append(caption, select)

  function build() {
    select.replaceChildren(...model.options.map(([name, title]) => new Option(title, name)))
    select.value = model.value
  }
  select.addEventListener('change', () => {
    if (!document.body.classList.contains(EARLY)) { model.value = select.value; return }
    // Before Python: that scenario's own page (its pre-rendered copy), same layout.
    const here = new URLSearchParams(window.location.search)
    const next = new URLSearchParams({ scenario: select.value })
    if (here.has('embed')) { next.set('embed', here.get('embed')) }
    window.location.search = '?' + next.toString()
  })
  model.on('options', build)
  model.on('value', () => { select.value = model.value })
  build()
  return label
}
""".replace("__LABEL__", json.dumps(LABEL))
_ESM = _ESM.replace("__WORKS_EARLY__", json.dumps(EARLY_ATTRIBUTE))
_ESM = _ESM.replace("__EARLY__", json.dumps(EARLY_CLASS))


class ScenarioPicker(LeanComponent):
    options = param.List(default=[], doc="[name, title] of every scenario, in order")
    value = param.String(default="", doc="The open scenario; set by the browser or by Python")

    _esm = _ESM
