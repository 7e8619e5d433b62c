"""A request trace replayed on SGLang's model."""
