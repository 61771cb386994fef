"""What a checkpoint keeps of the settings it was written under, and the rules it enforces.

`shadow-controller run` records its `JobSettings` and the input it reads in
CHECKPOINT/settings.json (`save_settings`) before Spark starts. Two rules follow from it:

- the state layout is frozen (`check_frozen`): partition state is kept under groups that
  depend on `job.partition_buckets` and `spark.sql.shuffle.partitions` (Spark itself
  freezes the latter), and scale mode's buckets in layout `STATE_LAYOUT`; a run under
  other values would look every partition up under keys it was never stored under;
- the input is fixed (`check_source`): the checkpoint's offsets mean nothing for another
  directory or topic.

A replay starts from the recorded settings (`load_settings`).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from state_machines.events import InputLimits
from state_machines.model import ControllerConfig

from ..exits import UsageError
from .schema import JobSettings

SETTINGS_FILE = "settings.json"
SETTINGS_VERSION = 1

# Settings the checkpoint's state layout depends on: the groups partition state is kept
# under, the shuffle partitions their labels are balanced over (Spark itself freezes
# spark.sql.shuffle.partitions into the checkpoint), and the rule set, whose state has
# another shape (a ZK checkpoint's partitions are no KRaft registrations). STATE_LAYOUT names the
# layout version of scale mode's buckets (2: balanced labels, line-per-partition state).
FROZEN = ("partition_buckets", "shuffle_partitions", "controller.mode")
# the FROZEN setting `replay` may change: it then rebuilds the state from the input's start
REBUILT = "controller.mode"
STATE_LAYOUT = 2


class CheckpointError(UsageError):
    """A checkpoint that cannot be used: missing, or without the record of its settings."""


class CheckpointMismatch(CheckpointError):
    """The checkpoint was written under settings this run does not have."""


def _saved_doc(checkpoint: str) -> dict[str, Any] | None:
    path = os.path.join(checkpoint, SETTINGS_FILE)
    try:
        with open(path, encoding="utf-8") as fh:
            doc: dict[str, Any] | None = json.load(fh)
            return doc
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise CheckpointMismatch(
            f"{path} is not valid JSON ({exc}); cannot check the checkpoint"
        ) from None


def check_frozen(settings: JobSettings, checkpoint: str) -> None:
    """Refuse to run on a checkpoint whose state was laid out under other settings: the
    partitions' state would not be found, and the controller would start from nothing."""
    if not os.path.exists(os.path.join(checkpoint, "query")):
        return  # a new checkpoint
    doc = _saved_doc(checkpoint)
    if doc is None:
        raise CheckpointMismatch(
            f"{checkpoint} has query state but no {SETTINGS_FILE}; cannot check its state layout"
        )
    saved = load_settings(checkpoint)
    for name in FROZEN:
        now, then = frozen_value(settings, name), frozen_value(saved, name)
        if now != then:
            raise CheckpointMismatch(
                f"{name} is frozen into the checkpoint {checkpoint} ({then}); "
                f"it cannot be changed to {now}"
            )
    if saved.partition_buckets and doc.get("state_layout", 1) != STATE_LAYOUT:
        raise CheckpointMismatch(
            f"{checkpoint} keeps scale-mode state in layout {doc.get('state_layout', 1)}; "
            f"this build reads layout {STATE_LAYOUT}: start a new checkpoint"
        )


def frozen_value(settings: Any, dotted: str) -> Any:
    """The value of a FROZEN setting (a JobSettings field, or `controller.<field>`)."""
    for part in dotted.split("."):
        settings = getattr(settings, part)
    return settings


def source_of(settings: JobSettings) -> str:
    """What the job reads, as recorded in its checkpoint: the offsets there mean nothing
    for another input."""
    if settings.input.startswith("file:"):
        return "file:" + os.path.abspath(settings.input[5:])
    if settings.input.startswith("metadata-log:"):
        return "metadata-log:" + os.path.abspath(settings.input[13:])
    servers = ",".join(
        sorted(s.strip() for s in settings.bootstrap_servers.split(",") if s.strip())
    )
    return f"kafka topic {settings.events_topic} at {servers}"


def check_source(settings: JobSettings, checkpoint: str) -> None:
    """Refuse to run a checkpoint on another input than the one it was first run on."""
    recorded = (_saved_doc(checkpoint) or {}).get("source")
    if recorded is not None and recorded != source_of(settings):
        raise CheckpointMismatch(
            f"the checkpoint {checkpoint} reads {recorded}, not {source_of(settings)}: its "
            "offsets belong to that "
            "input; start a new checkpoint (or, if it is the same data under another "
            'name, edit "source" '
            f"in {os.path.join(checkpoint, SETTINGS_FILE)})"
        )


def save_settings(settings: JobSettings, checkpoint: str) -> None:
    """Record the settings of a run, and the input it reads, in CHECKPOINT/settings.json (a
    replay starts from them; a later run must read the same input)."""
    doc = {
        "version": SETTINGS_VERSION,
        "state_layout": STATE_LAYOUT,
        "source": source_of(settings),
        "job": dataclasses.asdict(settings),
    }
    os.makedirs(checkpoint, exist_ok=True)
    path = os.path.join(checkpoint, SETTINGS_FILE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(f"{path}.tmp", path)


def load_settings(checkpoint: str) -> JobSettings:
    """The settings a run recorded in `checkpoint`."""
    path = os.path.join(checkpoint, SETTINGS_FILE)
    if not os.path.isdir(checkpoint):
        raise CheckpointError(f"{checkpoint}: no such checkpoint directory")
    doc = _saved_doc(checkpoint)
    if doc is None:
        raise CheckpointError(
            f"{path} not found: the checkpoint was not written by a run that records its settings"
        )
    if doc.get("version") != SETTINGS_VERSION:
        raise CheckpointError(
            f"{path}: settings version {doc.get('version')!r}, expected {SETTINGS_VERSION}"
        )
    job = dict(doc["job"])
    job["controller"] = ControllerConfig(**_known(ControllerConfig, job.get("controller", {})))
    job["limits"] = InputLimits(**_known(InputLimits, job.get("limits", {})))
    return JobSettings(**_known(JobSettings, job))


def _known(cls: type, fields: dict[str, Any]) -> dict[str, Any]:
    # a field written by an older or newer build is left to its default or ignored
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in fields.items() if k in names}
