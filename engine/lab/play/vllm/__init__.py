"""vLLM's side of playing a scenario: its snapshot, the step's facts, narration, the
timeline, the variants it runs."""
