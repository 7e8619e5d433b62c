"""A model of SGLang 0.5.23's prefix cache: the radix tree, the token-to-KV slot pool,
the schedule policy and a minimal scheduler. Standard library only."""
