// The start page (start_page.py): plain links, nothing here needs Python.
// On the static site its early page (app/page/early_page.js) sits under Panel's loading
// veil until Python is ready; the page already works, so the veil is lifted (the page's
// own stylesheet, loading_veil.css) while <body> keeps Panel's loading class until the
// live page arrives. The workload lab (`?lab=`) has no early page and opens on this one:
// there the lab's own loading page covers it (start_lab_wait.css), and a status line
// says what the page waits for.
import { queryParameter, startAsked } from './address.js'
import { statusNote } from './status_note.js'
import { addStyle, el } from './dom.js'

const LIFTED = 'pcl-start'
const LAB_WAIT = 'pcl-lab-wait'

export function render({ model }) {
  const host = el('div')
  const show = () => { host.innerHTML = model.html }
  model.on('html', show)
  show()
  const body = document.body
  if (!body.classList.contains('pn-loading')) { return host }
  if (queryParameter(model.address.lab) !== null) {
    addStyle(model.lab_css, 'pcl-lab-style')
    const { note, stop } = statusNote(model.lab_hint)
    const loading = el('div', 'pcl-lab-loading')
    loading.innerHTML = model.lab_html
    body.classList.add(LAB_WAIT)
    body.append(loading, note)
    model.on('remove', () => {
      stop()
      note.remove()
      loading.remove()
      body.classList.remove(LAB_WAIT)
    })
  } else if (startAsked(model.address)) {  // not this copy for an address whose own is missing
    addStyle(model.veil_css, 'pcl-start-style')
    body.classList.add(LIFTED)
    model.on('remove', () => body.classList.remove(LIFTED))
  }
  return host
}
