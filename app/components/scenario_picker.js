import { EARLY, WORKS_EARLY } from './early.js'

export function render({ model }) {
  const label = document.createElement('label')
  label.className = 'scenario-picker'
  label.setAttribute(WORKS_EARLY, '')  // works before Python (early_steps.py)
  const caption = document.createElement('span')
  caption.textContent = model.label
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
