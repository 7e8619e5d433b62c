import { ask } from './position.js'
import { arrowsOnlyMoveFocus, engineOf, pickerPart, scenarioModes } from './radios.js'

// The engines the player's scenario plays on; a scenario on one engine hides the part
// (so a playground link's page before Python shows it as soon as its document has both).
export function render(part) {
  const { model } = part
  let byEngine = {}  // engine -> the scenario's modes on it
  const shown = {}  // engine -> the mode last shown on it, to come back to
  // Another engine: its mode last shown in this scenario, else its first; the player
  // keeps the step (within that timeline's last).
  const pick = (next) => {
    const modes = byEngine[next] || []
    if (modes.length) { ask({ mode: modes.includes(shown[next]) ? shown[next] : modes[0] }) }
  }
  const group = pickerPart(part, (at) => {
    const found = scenarioModes(at)
    byEngine = {}
    for (const m of found.modes) {
      const e = engineOf(m, model.sglang_modes)
      byEngine[e] = [...(byEngine[e] || []), m]
    }
    const engine = engineOf(found.mode, model.sglang_modes)
    shown[engine] = found.mode
    return { options: model.engines.filter(([e]) => e in byEngine), value: engine }
  }, pick)
  group.dataset.testid = 'engine-picker'
  arrowsOnlyMoveFocus(group)  // another engine is a new page of views: Enter or a click
  return group
}
