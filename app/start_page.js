// The start page (start_page.py): plain links, nothing here needs Python.
// On the static site its pre-rendered copy sits under Panel's loading veil until
// Python is ready; the page already works, so the veil is lifted (the page's own
// stylesheet, start_veil.css) while <body> keeps Panel's loading class until the
// live page arrives.
const LIFTED = 'pcl-start'

// The address asks for the start page (as app/url.py parse_link decides): not when the
// page falls back on this copy for an address whose own copy is missing.
function startAsked(model) {
  const asked = new URLSearchParams(window.location.search)
  const embed = asked.get('embed')
  return !model.positions.some((name) => asked.has(name)) &&
    !(embed !== null && model.true_values.includes(embed.toLowerCase()))
}

export function render({ model }) {
  const host = document.createElement('div')
  const show = () => { host.innerHTML = model.html }
  model.on('html', show)
  show()
  const body = document.body
  if (body.classList.contains('pn-loading') && startAsked(model)) {
    if (!document.getElementById('pcl-start-style')) {
      const style = document.createElement('style')
      style.id = 'pcl-start-style'
      style.textContent = model.veil_css
      document.head.append(style)
    }
    body.classList.add(LIFTED)
    model.on('remove', () => body.classList.remove(LIFTED))
  }
  return host
}
