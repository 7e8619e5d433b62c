import { deckSlot } from './deck_slot.js'
import { ask } from './position.js'
import { el } from './dom.js'

// The hash chain (app/views/chain.py answers its picks): the step deck's page, whose pickers ask Python for the
// chain's pages anew, and the button that measures the hashing cost in the page's own
// Python.
export function render({ model, view }) {
  const root = el('div')
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
  const measure = el('button', 'measure', model.measure_label)
  const measured = el('div')
  measure.addEventListener('click', () => {
    measure.disabled = true  // (a few seconds of hashing)
    model.ask({ ask: 'measure' }).then(({ html }) => {
      measured.innerHTML = html || ''
      measure.disabled = false
    })
  })
  root.append(deck, measure, measured)
  return root
}
