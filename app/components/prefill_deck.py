"""The prefill calculator's slot: its page of the bundle at the player's position, and its
fields and buttons.

While the calculator follows the steps, each step's page carries the fields it was worked
out from (app/render/prefill.py, `data-fields`), and the fields show them: stepping needs
no word from Python. The learner's acts are the one thing sent: `act`, [what, the fields'
texts], "own" (typed), "example" (the agent-prompt example) or "step" (follow the steps
again from here), which Python answers with the calculator's pages (app/views/prefill.py).
"""

from __future__ import annotations

import param

from app.components.step_deck import StepDeck
from app.render.prefill_inputs import FIELDS, seed_texts

SEED_LABEL = "Agent-prompt example (2,200 / 2,000)"
FROM_STEP_LABEL = "This step's request"


class PrefillDeck(StepDeck):
    act = param.List(default=[], doc="From the browser: [own|example|step, the fields' texts]")
    labels = param.Dict(default=dict(FIELDS), constant=True, doc="Field name -> its label")
    seed = param.Dict(default=seed_texts(), constant=True, doc="The agent-prompt example")
    seed_label = param.String(default=SEED_LABEL, constant=True)
    from_step_label = param.String(default=FROM_STEP_LABEL, constant=True)

    _esm = "prefill_deck.js"
