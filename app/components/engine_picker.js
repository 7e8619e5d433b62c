import { ask, follow } from './position.js'
import { arrowsOnlyMoveFocus, engineOf, fillRadios, radioGroup, scenarioModes } from './radios.js'

export function render({ model, view }) {
  const radios = radioGroup(model.label)
  const group = radios.group
  group.dataset.testid = 'engine-picker'
  arrowsOnlyMoveFocus(group)  // another engine is a new page of views: Enter or a click
  let inputs = []
  let built = ''  // the engines shown, as one string
  let engine = null  // the engine of the player's timeline
  let byEngine = {}  // engine -> the scenario's modes on it
  const shown = {}  // engine -> the mode last shown on it, to come back to

  function check() {
    for (const input of inputs) { input.checked = input.value === engine }
  }
  // Another engine: its mode last shown in this scenario, else its first; the player
  // keeps the step (within that timeline's last).
  function pick(next) {
    const modes = byEngine[next] || []
    if (modes.length) { ask({ mode: modes.includes(shown[next]) ? shown[next] : modes[0] }) }
  }
  function follows(at) {
    const found = scenarioModes(at)
    byEngine = {}
    for (const m of found.modes) {
      const e = engineOf(m, model.sglang_modes)
      byEngine[e] = [...(byEngine[e] || []), m]
    }
    engine = engineOf(found.mode, model.sglang_modes)
    shown[engine] = found.mode
    const engines = model.engines.filter(([e]) => e in byEngine)
    const names = engines.map(([e]) => e).join('/')
    if (names !== built) {
      built = names
      inputs = fillRadios(radios, model.label, engines, pick, check)
    }
    // A scenario that plays on one engine: the whole component hides, margins included
    // (so a playground link's page before Python shows it as soon as its document has both).
    const hidden = engines.length < 2 ? 'none' : ''
    group.style.display = hidden
    if (view && view.el) { view.el.style.display = hidden }
    check()
  }
  follow(model, follows)
  return group
}
