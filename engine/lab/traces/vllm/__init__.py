"""A request trace replayed on vLLM's model."""
