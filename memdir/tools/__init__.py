"""The memory tools: plain functions over a `Memory` and a `Session`, returning the text the model sees.

Nothing here imports the MCP SDK; `memdir.server` registers these functions as MCP tools
(their docstrings are written for the model) and turns `memdir.core.errors.MemdirError`
into tool errors.
"""

from memdir.tools.load_skill import SkillLoad, load_skill, toolset_reminder
from memdir.tools.memory_delete import memory_delete
from memdir.tools.memory_edit import memory_edit
from memdir.tools.memory_glob import memory_glob
from memdir.tools.memory_grep import OUTPUT_MODES, memory_grep
from memdir.tools.memory_read import memory_read
from memdir.tools.memory_write import memory_write
from memdir.tools.session import Session

__all__ = [
    "OUTPUT_MODES",
    "Session",
    "SkillLoad",
    "load_skill",
    "memory_delete",
    "memory_edit",
    "memory_glob",
    "memory_grep",
    "memory_read",
    "memory_write",
    "toolset_reminder",
]
