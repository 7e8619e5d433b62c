"""Prefix Cache Lab's Panel app: renders the engine's timelines, never re-runs their logic."""
