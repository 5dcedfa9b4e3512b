"""`memdir serve` loads only what its first answers need: the store, the model and their libraries come after."""

from __future__ import annotations

import json
import subprocess
import sys

FIRST_ANSWERS = """
import json, sys
import anyio
from memdir.cli import app  # what `memdir serve` imports to read its command line
from memdir.core.settings import Settings
from memdir.server.app import build_server

tools = anyio.run(build_server(Settings(root=sys.argv[1], mode=sys.argv[2])).list_tools)
heavy = ("numpy", "onnxruntime", "tokenizers", "sqlite3", "portalocker", "yaml")
print(json.dumps({"tools": len(tools), "loaded": [name for name in heavy if name in sys.modules]}))
"""


def test_tools_are_listed_before_the_store_and_the_model_are_imported(tmp_path):
    for mode in ("assistant", "researcher"):
        done = subprocess.run([sys.executable, "-c", FIRST_ANSWERS, str(tmp_path / "memory"), mode],
                              capture_output=True, text=True, check=True)
        answer = json.loads(done.stdout)
        assert answer["tools"] > 10 and answer["loaded"] == [], (mode, answer)
