import { ask, follow } from './position.js'
import { engineOf, fillRadios, radioGroup, scenarioModes } from './radios.js'

export function render({ model, view }) {
  const radios = radioGroup(model.label)
  const group = radios.group
  let inputs = []
  let built = ''  // the modes shown, as one string
  let mode = null  // the mode of the player's timeline

  function check() {
    for (const input of inputs) { input.checked = input.value === mode }
  }
  // The modes of the player's scenario on the engine of its timeline (the engine
  // picker switches engines), in the document's order.
  function follows(at) {
    const found = scenarioModes(at)
    mode = found.mode
    const engine = engineOf(mode, model.sglang_modes)
    const modes = found.modes.filter((m) => engineOf(m, model.sglang_modes) === engine)
    if (modes.join('/') !== built) {
      built = modes.join('/')
      inputs = fillRadios(radios, model.label, modes.map((m) => [m, m]),
        (m) => ask({ mode: m }), check)
    }
    // One mode on this engine: nothing to pick; the whole part hides, margins included.
    const hidden = modes.length < 2 ? 'none' : ''
    group.style.display = hidden
    if (view && view.el) { view.el.style.display = hidden }
    check()
  }
  follow(model, follows)
  return group
}
