"""One view per part of the figure; each renders a timeline step to HTML in place."""
