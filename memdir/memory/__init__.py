"""`Memory`, the one object everything above storage uses: a store, its index and its model behind one
small API (`memdir.memory.facade`)."""

from memdir.memory.facade import Memory, NewEntry

__all__ = ["Memory", "NewEntry"]
