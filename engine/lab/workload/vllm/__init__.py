"""The workload lab's runner on vLLM's model."""
