"""The memory tools: plain functions over a `Memory` and a `Session`, returning the text the model sees.

One module per tool (``memdir.tools.memory_write.memory_write`` ...). Nothing here imports the
MCP SDK; `memdir.server` registers these functions as MCP tools (their docstrings are written
for the model) and turns `memdir.core.errors.MemdirError` into tool errors. This package
imports none of its modules itself: the server imports each tool's module at the tool's
first call, so a client's ``tools/list`` never waits for them.
"""
