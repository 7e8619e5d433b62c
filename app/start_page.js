// The start page (start_page.py): plain links, nothing here needs Python.
// On the static site its pre-rendered copy sits under Panel's loading veil until
// Python is ready; the page already works, so the veil goes at once.
export function render({ model }) {
  const host = document.createElement('div')
  const show = () => { host.innerHTML = model.html }
  model.on('html', show)
  show()
  const body = document.body
  if (body.classList.contains('pn-loading')) {
    body.classList.remove('pn-loading', 'pn-arc')
    for (const msg of [...document.getElementsByClassName('pn-loading-msg')]) { msg.remove() }
  }
  return host
}
