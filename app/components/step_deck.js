import { deckSlot } from './deck_slot.js'

// A view's slot (step_deck.py): its page of the player's bundle at the player's position.
export function render({ model, view }) {
  return deckSlot({ model, view })
}
