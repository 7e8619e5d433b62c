"""SGLang's side of playing a scenario: its snapshot, the step's facts, narration, the timeline."""
