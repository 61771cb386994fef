"""The operator and incident tools, around the streaming shell: the `shadow-controller`
command line and what it runs besides the job (bridge, inspect, replay, branch, timeline,
audit, demo, the embedded broker).

They depend on the shell (`streaming/`) and the core (`state_machines/`); neither of
those imports this package (tests/unit/test_import_boundary.py).
"""
