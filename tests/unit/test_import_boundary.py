"""The sans-IO boundary of `state_machines/` (docs/style.md, rule 1).

No module of the core imports pyspark, pandas, pyarrow, a Kafka client (confluent_kafka,
kafka-python's `kafka`), `time`, `random`, `uuid` or a logging handler. Two independent
proofs:

1. static: every module's source is parsed with `ast` and each `import`, `from ... import`
   and literal `__import__` / `importlib.import_module` call is checked (a dynamic import
   with a computed name is refused too, since it cannot be checked);
2. dynamic: a subprocess installs a `sys.meta_path` finder that raises on the forbidden
   packages (whoever imports them) and an `__import__` guard that refuses the forbidden
   modules to any importer inside the package (`time` is already loaded at interpreter
   start, so a finder alone would never see `import time`), imports every module of the
   package and runs a small cluster through the engine.

Both checks are first shown to catch a planted violation, so they cannot pass vacuously.

At the end of the file, the same static reading proves the layering above the core: no
module of `streaming/` or `state_machines/` imports `shadow_controller/`, and `shadow_controller/`
has no import cycles (each check also shown on a planted violation).
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "state_machines"

# Forbidden whatever the submodule: `import pandas.core`, `from kafka.admin import ...`.
FORBIDDEN_PACKAGES = frozenset(
    {"pyspark", "pandas", "pyarrow", "confluent_kafka", "kafka", "time", "random", "uuid"}
)
# Forbidden modules inside allowed packages: logging itself is allowed, its handlers are not.
FORBIDDEN_MODULES = frozenset({"logging.handlers"})


def forbidden_name(module: str, names: tuple[str, ...] = ()) -> str | None:
    """Why importing `names` from `module` crosses the boundary, or None."""
    if module.split(".")[0] in FORBIDDEN_PACKAGES:
        return module
    for bad in FORBIDDEN_MODULES:
        if module == bad or module.startswith(bad + "."):
            return module
    if module == "logging":
        for name in names:
            if name == "handlers" or name.endswith("Handler"):
                return f"logging.{name}"
    return None


def boundary_violations(source: str, filename: str = "<source>") -> list[str]:
    """Every import in `source` that crosses the boundary, as 'line N: reason'."""
    out = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (bad := forbidden_name(alias.name)) is not None:
                    out.append(f"line {node.lineno}: import {bad}")
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: inside the package, checked where it is defined
                continue
            assert node.module is not None
            if (bad := forbidden_name(node.module, tuple(a.name for a in node.names))) is not None:
                out.append(f"line {node.lineno}: from {node.module} import ... ({bad})")
        elif isinstance(node, ast.Call):
            func = node.func
            dynamic = (isinstance(func, ast.Name) and func.id == "__import__") or (
                isinstance(func, ast.Attribute) and func.attr == "import_module"
            )
            if not dynamic:
                continue
            arg = node.args[0] if node.args else None
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                out.append(f"line {node.lineno}: dynamic import with a computed module name")
            elif (bad := forbidden_name(arg.value)) is not None:
                out.append(f"line {node.lineno}: dynamic import of {bad}")
    return out


def core_modules() -> list[Path]:
    files = sorted((ROOT / PACKAGE).rglob("*.py"))
    assert files, f"no modules found under {ROOT / PACKAGE}"
    return files


def core_module_names() -> set[str]:
    """Every module and subpackage of the core, dotted from the package ("kraft.records")."""
    names = set()
    for path in core_modules():
        parts = path.relative_to(ROOT / PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            names.add(".".join(parts))
    return names


# -- the static check ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "source, caught",
    [
        ("import time", True),
        ("import random as rnd", True),
        ("from uuid import uuid4", True),
        ("import pandas.core.frame", True),
        ("from pyspark.sql import SparkSession", True),
        ("import pyarrow", True),
        ("from confluent_kafka import Producer", True),
        ("from kafka.admin import KafkaAdminClient", True),
        ("import logging.handlers", True),
        ("from logging import handlers", True),
        ("from logging import StreamHandler", True),
        ("def f():\n    import time\n    return time.time()", True),
        ("__import__('random')", True),
        ("import importlib\nimportlib.import_module('uuid')", True),
        ("import importlib\nname = 'x'\nimportlib.import_module(name)", True),
        ("import logging\nlog = logging.getLogger(__name__)", False),
        ("from logging import getLogger", False),
        ("import json, re", False),
        ("from . import events as ev", False),
        ("from .model import LeaderAndIsr", False),
        ("import kafka_shadow_helpers", False),
        ("import timeit_free_name_lookalike", False),
    ],
)
def test_ast_check_classifies_imports(source: str, caught: bool) -> None:
    assert bool(boundary_violations(source)) is caught, boundary_violations(source)


@pytest.mark.parametrize("path", core_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_core_module_imports_stay_inside_the_boundary(path: Path) -> None:
    violations = boundary_violations(path.read_text(encoding="utf-8"), str(path))
    assert not violations, f"{path.relative_to(ROOT)} crosses the sans-IO boundary:\n" + "\n".join(
        violations
    )


def test_every_core_module_is_checked() -> None:
    """The parametrised list is the package's full module list (nothing skipped)."""
    prefix = PACKAGE + "."
    package_path = importlib.import_module(PACKAGE).__path__
    discovered = {m.name.removeprefix(prefix) for m in pkgutil.walk_packages(package_path, prefix)}
    assert core_module_names() == discovered


# -- the dynamic check --------------------------------------------------------------------

# Runs in a fresh interpreter: argv[1] = package name, argv[2] = directory holding it,
# argv[3] = "engine" to also run a small cluster through state_machines.engine.
_GUARDED_IMPORT = textwrap.dedent(
    """
    import builtins, importlib, importlib.abc, json, pkgutil, sys

    package, where, exercise = sys.argv[1], sys.argv[2], sys.argv[3]
    forbidden_packages = set(json.loads(sys.argv[4]))
    forbidden_modules = set(json.loads(sys.argv[5]))
    heavy = {"pyspark", "pandas", "pyarrow", "confluent_kafka", "kafka"}
    blocked = []

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname.split(".")[0] in heavy:
                blocked.append(fullname)
                raise ImportError(f"import of {fullname} is blocked by the boundary test")
            return None

    real_import = builtins.__import__

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {}).get("__name__") or ""
        if level == 0 and importer.split(".")[0] == package:
            names = [name] + [f"{name}.{f}" for f in (fromlist or ())]
            for full in names:
                top = full.split(".")[0]
                bad_logging = name == "logging" and full != name and (
                    full.endswith("Handler") or full == "logging.handlers")
                if top in forbidden_packages or bad_logging or any(
                        full == m or full.startswith(m + ".") for m in forbidden_modules):
                    blocked.append(f"{importer} -> {full}")
                    raise ImportError(f"{importer} imports {full}: blocked by the boundary test")
        return real_import(name, globals, locals, fromlist, level)

    sys.meta_path.insert(0, Blocker())
    builtins.__import__ = guarded
    sys.path.insert(0, where)
    imported, errors = [], []
    mod = importlib.import_module(package)
    for info in pkgutil.walk_packages(mod.__path__, package + "."):
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except ImportError as exc:
            errors.append(f"{info.name}: {exc}")
    if exercise == "engine" and not errors:
        from state_machines.engine import Engine
        from state_machines.events import parse_event
        log = [
            {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": 10 + b}
            for b in (1, 2, 3)
        ]
        log += [
            {"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1},
            {"v": 1, "type": "TopicCreation", "topic": "orders", "partitions": {"0": [1, 2, 3]}},
            {"v": 1, "type": "ControlledShutdown", "broker_id": 1, "broker_epoch": 11},
            {"v": 1, "type": "BrokerFailure", "broker_id": 1},
            {
                "v": 1, "type": "PartitionReassignment", "topic": "orders", "partition": 0,
                "target_replicas": [2, 3],
            },
            {"v": 1, "type": "TopicDeletion", "topic": "orders"},
        ]
        engine = Engine()
        for offset, event in enumerate(log):
            engine.process(parse_event(event, offset))
        engine.state_json()
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
    print(json.dumps(
        {"imported": imported, "errors": errors, "blocked": blocked, "heavy_loaded": loaded}
    ))
    """
)


def run_guarded(package: str, where: Path, exercise: str = "") -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            _GUARDED_IMPORT,
            package,
            str(where),
            exercise or "-",
            json.dumps(sorted(FORBIDDEN_PACKAGES)),
            json.dumps(sorted(FORBIDDEN_MODULES)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=where,
    )
    assert proc.returncode == 0, f"guarded import crashed:\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_guard_catches_a_planted_violation(tmp_path: Path) -> None:
    """The subprocess guard is not vacuous: a package that imports `time` directly (already
    loaded at interpreter start), `random` inside a function, and pandas is caught."""
    pkg = tmp_path / "leaky_core"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "clock.py").write_text("import time\n")
    (pkg / "late.py").write_text(
        "def pick():\n    from random import choice\n    return choice\n\npick()\n"
    )
    (pkg / "frames.py").write_text("import pandas\n")
    (pkg / "logs.py").write_text("from logging import FileHandler\n")
    (pkg / "clean.py").write_text("import json\nimport logging\n")
    result = run_guarded("leaky_core", tmp_path)
    failed = {e.split(":")[0] for e in result["errors"]}
    assert failed == {
        "leaky_core.clock",
        "leaky_core.late",
        "leaky_core.frames",
        "leaky_core.logs",
    }, result
    assert "leaky_core.clean" in result["imported"]
    assert result["heavy_loaded"] == []


def test_core_imports_and_runs_with_forbidden_modules_blocked() -> None:
    result = run_guarded(PACKAGE, ROOT, "engine")
    assert result["errors"] == [], "state_machines needs a forbidden module:\n" + "\n".join(
        result["errors"]
    )
    assert result["blocked"] == [], f"state_machines tried forbidden imports: {result['blocked']}"
    assert result["heavy_loaded"] == [], f"forbidden packages were loaded: {result['heavy_loaded']}"
    expected = {f"{PACKAGE}.{name}" for name in core_module_names()}
    assert expected <= set(result["imported"]), sorted(expected - set(result["imported"]))


# -- the shell has no import cycles ------------------------------------------------------------
#
# `streaming/` is layered (settings, codec and storage below the operators, the query, the
# sink and the runner; the Kafka package one way: source -> sink -> producer). A cycle,
# even through an import inside a function, is a layer that knows its caller. Checked
# statically over every import statement anywhere in a module, TYPE_CHECKING blocks too.

SHELL = "streaming"
TOOLS = "shadow_controller"


def package_modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `package` under `root` (a package is
    its `__init__.py`)."""
    files = sorted((root / package).rglob("*.py"))
    assert files, f"no modules found under {root / package}"
    out = {}
    for path in files:
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` imports anywhere (a function's body
    included), with the packages Python initialises on the way."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets.add(module)
            targets.update(
                f"{module}.{alias.name}" for alias in node.names
            )  # `from . import codec`
    edges = set()
    for target in targets:
        parts = target.split(".")
        edges.update(
            m
            for m in (".".join(parts[:i]) for i in range(1, len(parts) + 1))
            if m in known and m != name
        )
    return edges


def import_cycles(root: Path, package: str) -> list[list[str]]:
    """The package's import cycles: every strongly connected group of more than one module."""
    modules = package_modules(root, package)
    graph = {m: sorted(imported_modules(m, p, set(modules))) for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_cycle_check_catches_planted_cycles(tmp_path: Path) -> None:
    """Not vacuous: a cycle closed by an import inside a function, one through a relative
    `from .. import`, and one through a package's `__init__` are found; a layered package is
    clean."""
    pkg = tmp_path / "loopy"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def late():\n    from .a import thing\n    return thing\n")
    (pkg / "c.py").write_text("from .sub.d import x\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "d.py").write_text("import json\n\ndef f():\n    from ..c import y\n")
    (pkg / "e.py").write_text("from .sub2 import z\n")
    (pkg / "sub2").mkdir()
    (pkg / "sub2" / "__init__.py").write_text("from ..e import w\n")
    (pkg / "clean.py").write_text("from .a import b\nimport loopy.sub\n")
    assert import_cycles(tmp_path, "loopy") == [
        ["loopy.a", "loopy.b"],
        ["loopy.c", "loopy.sub.d"],
        ["loopy.e", "loopy.sub2"],
    ]
    for path in pkg.rglob("*.py"):
        path.write_text("import json\n")
    (pkg / "a.py").write_text("from . import b\nfrom .sub import d\n")
    (pkg / "sub" / "d.py").write_text("def f():\n    from ..b import x\n")
    assert import_cycles(tmp_path, "loopy") == []


@pytest.mark.parametrize("package", [SHELL, PACKAGE, TOOLS])
def test_no_import_cycles(package: str) -> None:
    cycles = import_cycles(ROOT, package)
    assert not cycles, f"import cycles in {package}/:\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


# -- the shell does not import the tools; the tools have no import cycles ------------------
#
# `shadow_controller/` (the CLI and the incident tools) depends on the shell (`streaming/`) and the
# core, never the reverse. Static, like the check above: every import statement anywhere in
# a module (inside functions, under TYPE_CHECKING) and every literal dynamic import counts.

BELOW_THE_TOOLS = ("streaming", "state_machines")
# Modules below the tools that import a computed name, which no static check can follow,
# and why that name is never a tool.
COMPUTED_IMPORTS = {
    "streaming.codec": "imports cls.__module__ to resolve the type hints of the core's dataclasses",
    "streaming.tagged": (
        "imports the core's modules (pkgutil) and cls.__module__ to register its dataclasses"
    ),
}


def imported_names(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every dotted name `source` (the module `module`) imports, relative imports resolved:
    `from .x import y` gives both `pkg.x` and `pkg.x.y` (y may be a module), and so does
    `from pkg.x import y`. A dynamic import with a computed name gives `<dynamic>`."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here[: len(here) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "__import__") or (
                isinstance(func, ast.Attribute) and func.attr == "import_module"
            ):
                arg = node.args[0] if node.args else None
                names.add(
                    arg.value
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                    else "<dynamic>"
                )
    return names


def imports_tools(source: str, module: str = "streaming.x") -> list[str]:
    """The names of `tools` (or a computed name) that `source` imports, sorted."""
    return sorted(
        n
        for n in imported_names(source, module)
        if n == TOOLS or n.startswith(TOOLS + ".") or n == "<dynamic>"
    )


@pytest.mark.parametrize(
    "source, caught",
    [
        ("import shadow_controller", True),
        ("import shadow_controller.cli as cli", True),
        ("from shadow_controller import cli", True),
        ("from shadow_controller.replay import run_replay", True),
        ("def f():\n    from shadow_controller.inspect import inspect\n    return inspect", True),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from "
            "shadow_controller.audit import RuleOutcome",
            True,
        ),
        ("__import__('shadow_controller.bridge')", True),
        ("import importlib\nimportlib.import_module('shadow_controller')", True),
        ("import importlib\nname = 'shadow_controller'\nimportlib.import_module(name)", True),
        ("from streaming import exits", False),
        ("from . import codec", False),
        ("from .settings.schema import JobSettings", False),
        ("import toolsmith", False),
        ("from state_machines import tools_free_name", False),
    ],
)
def test_tools_check_classifies_imports(source: str, caught: bool) -> None:
    assert bool(imports_tools(source)) is caught, imports_tools(source)


def tools_importers(root: Path = ROOT) -> dict[str, list[str]]:
    """Module file of the shell or the core -> the tools it imports (none, when all is well)."""
    offenders = {}
    for package in BELOW_THE_TOOLS:
        if not (root / package).is_dir():
            continue
        for name, path in package_modules(root, package).items():
            found = imports_tools(path.read_text(encoding="utf-8"), name)
            if name in COMPUTED_IMPORTS:
                found = [n for n in found if n != "<dynamic>"]
            if found:
                offenders[str(path.relative_to(root))] = found
    return offenders


def test_shell_check_catches_a_planted_violation(tmp_path: Path) -> None:
    shell = tmp_path / "streaming"
    shell.mkdir()
    (shell / "__init__.py").write_text("")
    (shell / "runner.py").write_text(
        "def report(exc):\n    from shadow_controller.console import report\n    return "
        "report('run', exc)\n"
    )
    (shell / "job.py").write_text("from . import runner\nfrom streaming.runner import report\n")
    assert tools_importers(tmp_path) == {
        "streaming/runner.py": ["shadow_controller.console", "shadow_controller.console.report"]
    }


def test_the_shell_and_the_core_do_not_import_the_tools() -> None:
    assert tools_importers() == {}, "the shell or the core imports the tools"


def test_cycle_check_catches_a_cycle_through_type_checking(tmp_path: Path) -> None:
    """A cycle through a function-level import and a TYPE_CHECKING import is found; a
    package whose imports go one way has none."""
    pkg = tmp_path / "loopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""a package"""\n')
    (pkg / "front.py").write_text("def main():\n    from .middle import run\n    return run()\n")
    (pkg / "middle.py").write_text("from loopy import back\n\ndef run():\n    return back.x\n")
    (pkg / "back.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .front import main\nx = 1\n"
    )
    (pkg / "alone.py").write_text("import json\n")
    modules = package_modules(tmp_path, "loopy")
    known = set(modules)
    # the function-level import is an edge (with the package Python initialises on the way)
    assert imported_modules("loopy.front", modules["loopy.front"], known) == {
        "loopy",
        "loopy.middle",
    }
    assert imported_modules("loopy.middle", modules["loopy.middle"], known) == {
        "loopy",
        "loopy.back",
    }
    assert import_cycles(tmp_path, "loopy") == [["loopy.back", "loopy.front", "loopy.middle"]]

    (pkg / "back.py").write_text("x = 1\n")
    assert import_cycles(tmp_path, "loopy") == []
