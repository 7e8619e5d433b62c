"""The workload lab's runner on SGLang's model."""
