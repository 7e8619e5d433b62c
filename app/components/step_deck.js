import { deckSlot } from './deck_slot.js'

// A view's slot: its page of the page's document at the player's position.
export function render({ model, view }) {
  return deckSlot({ model, view })
}
