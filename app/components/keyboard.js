import { ask } from './position.js'

// Inputs that take a key as text; a radio, a checkbox, a slider or a button does not.
const TEXT_INPUTS = ['text', 'search', 'email', 'number', 'password', 'tel', 'url']

function typingIn(target) {
  const tag = target.tagName
  const role = target.getAttribute('role')
  return (tag === 'INPUT' && TEXT_INPUTS.includes(target.type)) || tag === 'TEXTAREA' ||
    target.isContentEditable || role === 'textbox' || role === 'combobox'
}
const isSlider = (target) =>
  (target.tagName === 'INPUT' && target.type === 'range') || target.getAttribute('role') === 'slider'
// What space presses or opens by itself.
const takesSpace = (target) => ['BUTTON', 'SELECT'].includes(target.tagName) ||
  (target.tagName === 'INPUT' && ['radio', 'checkbox', 'button'].includes(target.type)) ||
  target.getAttribute('role') === 'button'

// key -> the player's move (the model's key_moves)
let keyMoves = {}

function onKey(event) {
  if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey) { return }
  const move = keyMoves[event.key]
  if (!move) { return }
  const target = event.composedPath()[0]
  if (target && target.nodeType === 1) {
    if (typingIn(target) || isSlider(target)) { return }
    if (event.key === ' ' && takesSpace(target)) { return }
  }
  event.preventDefault()  // an arrow on a radio or a select must not switch it
  ask({ move })
}

export function render({ model }) {
  keyMoves = model.key_moves
  document.addEventListener('keydown', onKey)
  model.on('remove', () => document.removeEventListener('keydown', onKey))
  const el = document.createElement('div')
  el.style.display = 'none'
  return el
}
