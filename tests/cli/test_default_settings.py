"""The default settings file is found beside the package, so `run` reads the same defaults
from any working directory; when it is missing (an installation without conf/), the
built-in defaults are used and the command says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streaming.settings import schema

ROOT = Path(__file__).resolve().parents[2]


def test_the_default_file_is_the_same_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conf").mkdir()
    # a conf/ in the working directory is not the default file
    (tmp_path / "conf" / "shadow-controller.toml").write_text('[job]\ninput = "file:/elsewhere"\n')
    monkeypatch.chdir(ROOT)
    at_root = schema.load(None)
    monkeypatch.chdir(tmp_path)
    assert (
        schema.load(None) == at_root == schema.read_file(ROOT / "conf" / "shadow-controller.toml")
    )
    assert schema.default_file_note(None) is None


def test_a_missing_default_file_means_the_built_in_defaults_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "conf" / "shadow-controller.toml"
    monkeypatch.setattr(schema, "DEFAULT_FILE", missing)
    values = schema.load(None, [("controller.mode", "kraft")])
    assert values == {"controller.mode": "kraft"}
    job, _, master = schema.job_settings(values)
    assert job.controller.mode == "kraft" and job.input == "kafka" and master == "local[2]"
    assert schema.default_file_note(None) == (
        f"no settings file at {missing} (the default); using the built-in defaults "
        "(give --config FILE to read one)"
    )
    assert schema.default_file_note("my.toml") is None
    # a file named with --config must exist
    with pytest.raises(schema.SettingError, match="no such settings file"):
        schema.load(str(tmp_path / "nope.toml"))


def test_run_help_names_the_default_file(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "shadow_controller.cli", "run", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "300"},
    )
    assert run.returncode == 0, run.stderr
    assert str(ROOT / "conf" / "shadow-controller.toml") in run.stdout
