// An element of the page's own, with its class and its text (text, never HTML: escaped).
export function el(tag, className = '', text = undefined) {
  const node = document.createElement(tag)
  if (className) { node.className = className }
  if (text !== undefined) { node.textContent = text }
  return node
}
