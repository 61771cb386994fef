"""The CLI's parser imports only the module of the command a command line names
(`shadow_controller.cli.LAZY_COMMANDS`), and `--help` still describes every command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from shadow_controller.cli import LAZY_COMMANDS

PROBE = """
import sys
from shadow_controller.cli import LAZY_COMMANDS, build_parser
build_parser(sys.argv[1:])
print(",".join(sorted(n for n, m in LAZY_COMMANDS.items()
                      if "shadow_controller." + m in sys.modules)))
"""


def _imported(*argv: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.parametrize(
    ("argv", "imported"),
    [
        (("run", "--available-now"), ""),
        # health reads the checkpoint with inspect's readers, what-if with health's
        (("health", "--checkpoint", "x"), "health,inspect"),
        (("what-if", "--checkpoint", "x"), "health,inspect,what-if"),
        (("metadata-log", "dump", "x"), "metadata-log"),
        (("nosuch",), ""),
    ],
)
def test_a_command_line_imports_only_its_commands_module(
    argv: tuple[str, ...], imported: str
) -> None:
    assert _imported(*argv) == imported


def test_help_and_a_missing_command_build_every_commands_parser() -> None:
    assert _imported("--help").split(",") == sorted(LAZY_COMMANDS)
    assert _imported().split(",") == sorted(LAZY_COMMANDS)
    out = subprocess.run(
        [sys.executable, "-m", "shadow_controller.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "run the controller in process over an events file" in out  # simulate's help
    assert "read a KRaft cluster's metadata log" in out
