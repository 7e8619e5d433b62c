"""Predict, then see: before a step that carries a lesson, a question about it.

The questions and their answers come from the timeline (engine/lab/play/questions.py); every
step's questions, in every mode of the scenario, are sent once in the page's document
(views/sender.py), and the stepping page's quiz part (quiz.js) follows the player, so
answering needs no Python (it works on the static site before Python is ready). The
score stays in the browser (localStorage). On by default on the full page, where the
learner can switch it off; off in the embed unless its address says `quiz=1`.
"""

from __future__ import annotations

STORAGE_KEY = "pcl-quiz"
