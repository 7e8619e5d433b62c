"""The lab around the model: play a scenario, trace and snapshot every step, build the
timeline, narrate it, run workloads, and the command line (``python -m engine``)."""
