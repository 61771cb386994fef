"""The wheel built from the repository installs only the project's three packages at the top
level (issue 44): `state_machines`, `streaming` and `shadow_controller`. A top-level `tools`
or `tests` would collide with other distributions' packages in the same environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"state_machines", "streaming", "shadow_controller"}
# what a working tree holds that is no part of a build: the wheel is built from a copy
# without them, so a build never writes into the tree and the venv is never read
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "*_cache", ".hypothesis", "build", "dist", "*.egg-info", "__pycache__"
)


def test_the_wheel_installs_only_the_three_packages(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    out = tmp_path / "wheel"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top = {name.split("/")[0] for name in names}
    dist_info = {name for name in top if name.endswith(".dist-info")}
    assert len(dist_info) == 1, top
    assert top - dist_info == PACKAGES, sorted(top - dist_info)
    # each package carries its code, not only an __init__
    for package in PACKAGES:
        assert sum(name.startswith(f"{package}/") for name in names) > 1, package
