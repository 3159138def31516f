"""What the command line prints for people: ``plain`` (no rich: the fast paths, hooks,
rewinds) and ``results`` built on it, and ``rich`` (tables and panels, loaded only to draw
for a terminal)."""
