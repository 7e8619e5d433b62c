"""The workload lab: knobs, presets, runs of many requests untraced, one row per engine step."""
