"""A scenario played into a timeline: the scenario files, the line tracer, the timeline
both engines share, and each engine's side (play/vllm, play/sglang)."""
