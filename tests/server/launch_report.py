"""The `memdir` command run by a child process that, on its way out, lists the modules it imported.

``python -c LAUNCH_AND_REPORT <report.json> <memdir arguments...>``: the report is a JSON list of
the names in ``sys.modules``, so a test can tell which libraries a command loaded; beside it,
``<report.json>.gc`` says whether the cyclic garbage collector was on at the end. A hook that
answered ends its process with ``os._exit`` (skipping the interpreter's teardown): the report
is written just before.
"""

LAUNCH_AND_REPORT = """
import gc, json, os, sys
from memdir import launch
out, sys.argv = sys.argv[1], ["memdir", *sys.argv[2:]]

def report():
    with open(out, "w") as file:
        json.dump(sorted(sys.modules), file)
    with open(out + ".gc", "w") as file:
        file.write(json.dumps(gc.isenabled()))

def exit_now(status, end=os._exit):
    report()
    end(status)

os._exit = exit_now
try:
    launch.main()
finally:
    report()
"""
