"""The hash chain's slot: its page of the bundle at the player's position, pickers included.

The pickers are part of each step's page (app/render/chain.py), so stepping and switching
modes show the step's requests and pair with no word from Python. A pick is the one
thing sent: `pick` ([timeline key, request, compare with]), which Python answers with the
chain's pages for it (app/views/chain.py). "Measure the hashing cost here" runs in the
page's own Python: `measure` counts the clicks, `measured` is Python's answer.
"""

from __future__ import annotations

import param

from app.components.step_deck import StepDeck


class ChainDeck(StepDeck):
    pick = param.List(default=[], doc="From the browser: [timeline key, request, compare with]")
    measure = param.Integer(default=0, doc="From the browser: clicks on the measure button")
    measured = param.String(default="", doc="The measured hashing cost, as HTML")
    measure_label = param.String(default="Measure the hashing cost here", constant=True)

    _esm = "chain_deck.js"
