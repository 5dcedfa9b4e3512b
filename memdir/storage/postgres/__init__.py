"""The PostgreSQL + pgvector store: one database that many memdir servers share.

`store.open_postgres` opens it (``--store postgresql://...``); `adapter` holds the entries,
`index` the search side, `schema` the migrations, `database` connections and the lock.
"""
