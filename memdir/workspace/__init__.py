"""The skill workspace: the Read, Write, Edit, Grep and Bash tools a loaded skill may use, confined to the
paths the skill allows (`memdir.workspace.tools`, `memdir.workspace.bash`)."""
