"""The mode picker (default, preempt, keep), in the browser.

Every mode of the open scenario is already in the browser (step_deck.py), so
picking one needs no Python: the picker announces the mode's timeline at step 0
on the step channel, every view swaps its page, and the step controls
(player_bar.py) take the new timeline and tell Python. It shows the mode the
channel names, or, until the channel names one of this scenario, its `mode`.
It works on the static site before Python is ready, like the step controls.
"""

from __future__ import annotations

import json

import param

from app.early_steps import EARLY_ATTRIBUTE
from app.views.step_deck import STEP_CHANNEL_JS, LeanComponent

LABEL = "Mode"

_ESM = (
    STEP_CHANNEL_JS
    + """
const LABEL = __LABEL__
const WORKS_EARLY = __WORKS_EARLY__
let groups = 0  // radio names must not collide between pickers on one page

export function render({ model }) {
  const group = document.createElement('div')
  group.className = 'modes'
  group.setAttribute('role', 'radiogroup')
  group.setAttribute('aria-label', LABEL)
  group.setAttribute(WORKS_EARLY, '')  // works before Python (early_steps.py)
  const name = `pcl-mode-${++groups}`
  let inputs = []

  function chosen() {
    const channel = globalThis.__pclStep
    const prefix = model.scenario + '/'
    if (channel && channel.key.startsWith(prefix)) {
      const mode = channel.key.slice(prefix.length)
      if (model.modes.includes(mode)) { return mode }
    }
    return model.mode
  }
  function check() {
    const mode = chosen()
    for (const input of inputs) { input.checked = input.value === mode }
  }
  function build() {
    const caption = document.createElement('span')
    caption.className = 'modes-label'
    caption.textContent = LABEL
    inputs = []
    const options = model.modes.map((mode) => {
      const option = document.createElement('label')
      option.className = 'mode'
      const input = document.createElement('input')
      input.type = 'radio'
      input.name = name
      input.value = mode
      input.addEventListener('change', () => {
        if (input.checked) { announce(model.scenario + '/' + mode, 0) }
      })
      inputs.push(input)
      option.append(input, document.createTextNode(mode))
      return option
    })
    group.replaceChildren(caption, ...options)
    check()
  }
  model.on(['scenario', 'modes'], build)
  model.on('mode', check)
  onStep(model, check)
  build()
  return group
}
""".replace("__LABEL__", json.dumps(LABEL)).replace("__WORKS_EARLY__", json.dumps(EARLY_ATTRIBUTE))
)


class ModePicker(LeanComponent):
    scenario = param.String(default="", doc="The open scenario")
    modes = param.List(default=[], item_type=str, doc="Its modes, in order")
    mode = param.String(default="", doc="The mode Python has open")

    _esm = _ESM
