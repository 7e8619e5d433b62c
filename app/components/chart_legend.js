// A chart's legend (chart_legend.py): a click on a series asks Python to hide or show
// it; the button shows at once whether its series is on.
export function render({ model }) {
  const host = document.createElement('div')
  const mark = () => {
    for (const button of host.querySelectorAll('button[data-key]')) {
      button.setAttribute('aria-pressed', String(!model.hidden.includes(button.dataset.key)))
    }
  }
  const show = () => {
    host.innerHTML = model.html
    mark()
  }
  host.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-key]')
    if (!button) { return }
    const key = button.dataset.key
    model.hidden = model.hidden.includes(key)
      ? model.hidden.filter((other) => other !== key)
      : [...model.hidden, key]
    mark()
  })
  model.on('html', show)
  model.on('hidden', mark)
  show()
  return host
}
