"""Typed links between entries and the graph they make (seed 003): `links` (the model and the
rules for reading and writing it), `neighbourhood` (an entry's neighbours, as text or Mermaid)."""
