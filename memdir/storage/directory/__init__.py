"""The directory store: entries as ``.md`` / ``.yml`` / ``.emb`` files under a root, serialised by a lock
file, written atomically, with a derived SQLite index and in-memory vectors under ``<root>/.memdir/``."""
