"""The look every layer that draws shares: the theme and how a stylesheet file is read."""
