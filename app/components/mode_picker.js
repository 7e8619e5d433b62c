import { ask } from './position.js'
import { engineOf, pickerPart, scenarioModes } from './radios.js'

// The modes of the player's scenario on the engine of its timeline (the engine picker
// switches engines), in the document's order.
export function render(part) {
  const { model } = part
  return pickerPart(part, (at) => {
    const { modes, mode } = scenarioModes(at)
    const engine = engineOf(mode, model.sglang_modes)
    const here = modes.filter((m) => engineOf(m, model.sglang_modes) === engine)
    return { options: here.map((m) => [m, m]), value: mode }
  }, (m) => ask({ mode: m }))
}
