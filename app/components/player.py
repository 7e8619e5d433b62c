"""The player: the one owner of the learner's position (timeline, mode, step, Play,
speed), in the browser, with the step bar it draws (Restart, Step back, Step forward,
Play, speed, scrubber).

The rules of stepping live here and only here: steps stay within 0..last, Play stops
by itself at the last step, Play at the last step replays from 0, and Step back,
Restart or the scrubber pause; a mode switch keeps the step (within that mode's last).

Every other part of the page asks it (the `pcl-ask` event of position.js: the mode
picker, the keyboard, the static site's early page) and follows what it announces (`pcl-at`,
with the bundle: every view's pages, the code, the questions): the views' decks, the
code panel, the questions, the mode picker. So a step or a mode needs no Python.
Python learns the position from `at`, which only the browser writes, and sends a new
position only inside a new `bundle` (a new scenario, an edit, an address the player
does not hold); the same parameter brings the rest of the pages a moment later.

The player keeps the address bar on the position (replaceState; a new scenario is a
new history entry), from each timeline's query in the bundle. Back or Forward to a
position it holds moves it; any other address goes to Python (`on_pop`).

On the static site the early page's player works before Python is ready
(app/page/early_page.js); the live page's player opens at the address it left and
carries on its Play and speed (sessionStorage). Asked to `reopen` (the early page of a
playground edited before Python), it opens the address's position, or sends the
address to Python when its bundle does not hold it.
"""

from __future__ import annotations

# Steps per second offered by the speed control, and their labels.
SPEEDS: dict[str, float] = {"0.5 steps/s": 0.5, "1 step/s": 1.0, "2 steps/s": 2.0, "4 steps/s": 4.0}
DEFAULT_SPEED = 1.0
# The buttons' names (the browser tests find them by name).
RESTART, BACK, FORWARD, PLAY, PAUSE = "Restart", "Step back", "Step forward", "Play", "Pause"
BUTTON_NAMES = (RESTART, BACK, FORWARD, PLAY, PAUSE)
# The page's first tab stop (skip_link.js) takes the keyboard to Step forward.
SKIP_TEXT = "Skip to the step controls"
# The moves another control may ask for (keyboard.py).
MOVES = ("restart", "back", "forward", "end", "play")
# The address parameters a position writes; others (embed, quiz) are kept.
POSITION_PARAMETERS = ("scenario", "playground", "mode", "step")
