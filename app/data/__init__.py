"""What the page shows, computed from the engine's timelines and the learner's input: no
Panel, no HTML (app/render/ draws it)."""
