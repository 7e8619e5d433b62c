"""Narration and scenario texts, kept out of code.

``scenarios/<name>.toml`` holds one scenario: its pool, setup, steps and the
narration of each step (shared by all modes, or per mode). The engine reads
them with ``engine.lab.play.scenario.load_scenario``.
"""
