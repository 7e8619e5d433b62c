import { deckSlot } from './deck_slot.js'
import { ask } from './position.js'
import { box, button, el } from './dom.js'

// The hash chain (app/views/chain.py answers its picks): the step deck's page, whose pickers ask Python for the
// chain's pages anew, and the button that measures the hashing cost in the page's own
// Python.
export function render({ model, view }) {
  const deck = deckSlot({ model, view })
  deck.addEventListener('change', (event) => {
    if (!event.target.matches('select[data-pick]')) { return }
    const at = deck.dataset.at || ''
    const value = (name) => deck.querySelector(`select[data-pick="${name}"]`).value
    const key = at.slice(0, at.lastIndexOf('@'))
    const step = Number(at.slice(at.lastIndexOf('@') + 1))
    model.ask({ ask: 'chain', key, step, primary: value('primary'), other: value('other') })
      .then(({ views }) => { if (views) { ask({ views }) } })
  })
  const measured = el('div')
  const measure = button('measure', model.measure_label, () => {
    measure.disabled = true  // (a few seconds of hashing)
    model.ask({ ask: 'measure' }).then(({ html }) => {
      measured.innerHTML = html || ''
      measure.disabled = false
    })
  })
  return box('', deck, measure, measured)
}
