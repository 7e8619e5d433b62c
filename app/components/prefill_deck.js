import { deckSlot } from './deck_slot.js'
import { ask, follow } from './position.js'
import { box, button, el } from './dom.js'

// The prefill calculator (app/views/prefill.py answers its acts): the step deck's page, the fields it follows
// while the learner has not typed, and the two buttons. An act asks Python for the
// calculator's pages anew.
export function render({ model, view }) {
  const deck = deckSlot({ model, view })
  const fields = el('div', 'prefill-fields')
  const inputs = {}
  for (const [name, caption] of Object.entries(model.labels)) {
    const label = el('label', 'field')
    const input = el('input')
    input.type = 'text'
    input.name = name
    // Named by its caption alone (a label around it would add its value to its name).
    input.setAttribute('aria-label', caption)
    input.spellcheck = false
    label.append(el('span', '', caption), input)
    fields.append(label)
    inputs[name] = input
  }
  let following = true
  const texts = () => Object.fromEntries(Object.entries(inputs).map(([n, el]) => [n, el.value]))
  const fill = (values) => {
    for (const [name, value] of Object.entries(values)) {
      if (inputs[name] && inputs[name].value !== value) { inputs[name].value = value }
    }
  }
  // The fields of the page shown: the step's, while following.
  const shownFields = () => {
    const page = deck.querySelector('[data-fields]')
    return page ? JSON.parse(page.dataset.fields) : null
  }
  const sync = () => {
    const values = following ? shownFields() : null
    if (values) { fill(values) }
  }
  let at = { key: '', step: 0 }  // the position shown
  const act = (what) => model.ask({ ask: 'prefill', what, texts: texts(), ...at })
    .then(({ views }) => { if (views) { ask({ views }) } })
  fields.addEventListener('input', () => {
    following = false
    act('own')
  })
  const buttons = box('prefill-buttons',
    button('measure', model.from_step_label, () => {
      following = true
      act('step')
      sync()
    }),
    button('measure', model.seed_label, () => {
      following = false
      fill(model.seed)
      act('example')
    }))
  // (after the deck's own: the page shown is the position's)
  follow(model, (position) => {
    at = { key: position.key, step: position.step }
    sync()
  })
  return box('', deck, fields, buttons)
}
