// An element of the page's own, with its class and its text (text, never HTML: escaped).
// A button is a plain one (never a form's submit).
export function el(tag, className = '', text = undefined) {
  const node = document.createElement(tag)
  if (className) { node.className = className }
  if (text !== undefined) { node.textContent = text }
  if (tag === 'button') { node.type = 'button' }
  return node
}

// A plain button that calls `onClick` when pressed.
export function button(className, text, onClick) {
  const node = el('button', className, text)
  node.addEventListener('click', onClick)
  return node
}

// A <div> of that class around `children`.
export function box(className, ...children) {
  const node = el('div', className)
  node.append(...children)
  return node
}

// A stylesheet to adopt in a shadow root.
export function cssSheet(text) {
  const sheet = new CSSStyleSheet()
  sheet.replaceSync(text)
  return sheet
}

// A <style> in the page's <head>; with an `id`, once (the one there is kept).
export function addStyle(css, id = '') {
  const there = id ? document.getElementById(id) : null
  if (there) { return there }
  const style = el('style')
  if (id) { style.id = id }
  style.textContent = css
  document.head.append(style)
  return style
}
