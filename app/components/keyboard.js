function deepAll(root, selector, out = []) {
  out.push(...root.querySelectorAll(selector))
  for (const el of root.querySelectorAll('*')) {
    if (el.shadowRoot) { deepAll(el.shadowRoot, selector, out) }
  }
  return out
}

function typingIn(target) {
  if (!target || target.nodeType !== 1) { return false }
  const tag = target.tagName
  const role = target.getAttribute('role')
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || target.isContentEditable ||
    role === 'slider' || role === 'textbox' || role === 'combobox'
}

// key -> names of the button it presses (the model's key_buttons)
let keyButtons = {}

function onKey(event) {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) { return }
  const names = keyButtons[event.key]
  if (!names) { return }
  const target = event.composedPath()[0]
  if (typingIn(target)) { return }
  const onButton = target && target.nodeType === 1 &&
    (target.tagName === 'BUTTON' || target.getAttribute('role') === 'button')
  if (event.key === ' ' && onButton) { return }  // space presses the focused button itself
  const buttons = deepAll(document, 'button')
  for (const name of names) {
    const button = buttons.find((b) => b.textContent.trim() === name)
    if (button) {
      event.preventDefault()
      if (!button.disabled) { button.click() }
      return
    }
  }
}

export function render({ model }) {
  keyButtons = model.key_buttons
  document.addEventListener('keydown', onKey)
  model.on('remove', () => document.removeEventListener('keydown', onKey))
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
