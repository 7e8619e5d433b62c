// The glossary panel (glossary.py). A click on a term anywhere on the page (views
// render in their own shadow roots, so the page's #anchors cannot reach this entry)
// opens the panel at the term's entry: no Python, so it works before Python too.
const REVEAL_EVENT = 'pcl-reveal'  // a container (views/panel_tabs.js) shows the sender

export function render({ model }) {
  const host = document.createElement('div')
  const show = () => { host.innerHTML = model.html }
  model.on('html', show)
  show()

  const onClick = (event) => {
    const link = event.composedPath().find((el) => el.nodeType === 1 && el.dataset &&
      el.dataset.term !== undefined && el.classList.contains('term'))
    if (!link) { return }
    const entry = host.querySelector(`[data-term-entry="${CSS.escape(link.dataset.term)}"]`)
    if (!entry) { return }
    event.preventDefault()
    const panel = host.querySelector('details')
    if (panel) { panel.open = true }
    host.dispatchEvent(new CustomEvent(REVEAL_EVENT, { bubbles: true, composed: true }))
    for (const other of host.querySelectorAll('.current')) { other.classList.remove('current') }
    entry.classList.add('current')
    if (entry.nextElementSibling) { entry.nextElementSibling.classList.add('current') }
    requestAnimationFrame(() => {
      entry.scrollIntoView({ block: 'nearest' })
      entry.focus({ preventScroll: true })
    })
  }
  document.addEventListener('click', onClick)
  model.on('remove', () => document.removeEventListener('click', onClick))
  return host
}
