import { deckSlot } from './deck_slot.js'

// The hash chain (chain_deck.py): the step deck's page, whose pickers tell Python a pick,
// and the button that measures the hashing cost in the page's own Python.
export function render({ model, view }) {
  const root = document.createElement('div')
  const deck = deckSlot({ model, view })
  deck.addEventListener('change', (event) => {
    if (!event.target.matches('select[data-pick]')) { return }
    const at = deck.dataset.at || ''
    const value = (name) => deck.querySelector(`select[data-pick="${name}"]`).value
    model.pick = [at.slice(0, at.lastIndexOf('@')), value('primary'), value('other')]
  })
  const measure = document.createElement('button')
  measure.type = 'button'
  measure.className = 'measure'
  measure.textContent = model.measure_label
  measure.addEventListener('click', () => { model.measure = model.measure + 1 })
  const measured = document.createElement('div')
  const showMeasured = () => { measured.innerHTML = model.measured }
  showMeasured()
  model.on('measured', showMeasured)
  root.append(deck, measure, measured)
  return root
}
