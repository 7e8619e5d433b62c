"""Request traces: read, replayed in order (a hit-rate curve), with time, against the paper."""
