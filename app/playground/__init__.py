"""The playground: the learner's own scenario, edited in the page and played by the engine."""
