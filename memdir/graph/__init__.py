"""Typed links between entries and the graph they make (seed 003): the link model is
`memdir.core.links` (the storage layer indexes it); here are `neighbourhood` (an entry's neighbours, as text or Mermaid)."""
