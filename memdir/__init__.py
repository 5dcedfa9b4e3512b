"""memdir: persistent memory for LLM agents, served over MCP."""

__version__ = "0.1.0"
