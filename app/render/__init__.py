"""Pure renderers: plain data in, HTML out; no Panel import, so they run wherever the
engine runs. Viewers (app/views/) and components (app/components/) import them, never
the reverse."""
