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

// Asks the player for the move of each key (`keyMoves`, key -> move) until it is stopped.
export function followKeys(keyMoves) {
  const onKey = (event) => {
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
  document.addEventListener('keydown', onKey)
  return () => document.removeEventListener('keydown', onKey)
}
