"""The `memdir` command run by a child process that, on its way out, lists the modules it imported.

``python -c LAUNCH_AND_REPORT <report.json> <memdir arguments...>``: the report is a JSON list of
the names in ``sys.modules``, so a test can tell which libraries a command loaded; beside it,
``<report.json>.gc`` says whether the cyclic garbage collector was on at the end.
"""

LAUNCH_AND_REPORT = """
import gc, json, sys
from memdir import launch
out, sys.argv = sys.argv[1], ["memdir", *sys.argv[2:]]
try:
    launch.main()
finally:
    with open(out, "w") as file:
        json.dump(sorted(sys.modules), file)
    with open(out + ".gc", "w") as file:
        file.write(json.dumps(gc.isenabled()))
"""
