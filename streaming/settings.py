"""Settings of `shadow-controller run`: a TOML file in conf/ plus command-line overrides."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from state_machines.events import InputLimits
from state_machines.model import ControllerConfig

if TYPE_CHECKING:
    from .job import JobSettings

DEFAULT_FILE = Path(__file__).resolve().parents[1] / "conf" / "shadow-controller.toml"


def flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    # TOML reads a bare dotted key as nested tables; Kafka and Spark names are dotted.
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"x = {text}")["x"]
    except tomllib.TOMLDecodeError:
        return text


def load(path: str | None, overrides: list[str] = ()) -> dict[str, Any]:
    """The settings as {section: {flat key: value}}; overrides are SECTION.KEY=VALUE."""
    with open(path or DEFAULT_FILE, "rb") as fh:
        raw = tomllib.load(fh)
    doc: dict[str, dict[str, Any]] = {}
    for section in ("job", "kafka", "spark", "controller", "input"):
        table = copy.deepcopy(raw.get(section, {}))
        options = table.pop("options", None) if section == "kafka" else None
        doc[section] = flatten(table) if section in ("spark", "controller") else table
        if section == "kafka":
            doc["kafka"]["options"] = {k: str(v) for k, v in flatten(options or {}).items()}
    for item in overrides:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ValueError(f"--set expects SECTION.KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        section, name = key.split(".", 1)
        if section == "kafka" and name.startswith("options."):
            doc["kafka"]["options"][name[len("options."):]] = value
        elif section in doc:
            doc[section][name] = _parse_value(value)
        else:
            raise ValueError(f"unknown settings section {section!r} in --set {item!r}")
    return doc


def job_settings(doc: dict[str, Any]) -> tuple["JobSettings", dict[str, str], str]:
    from .job import JobSettings  # Spark is imported only when a job is built

    job, kafka, spark = doc["job"], doc["kafka"], dict(doc["spark"])
    master = str(spark.pop("master", "local[2]"))
    shuffle = int(spark.get("spark.sql.shuffle.partitions", 2))
    settings = JobSettings(
        input=str(job.get("input", "kafka")),
        output=str(job.get("output", "kafka")),
        checkpoint=str(job.get("checkpoint", "checkpoints/shadow-controller")),
        controller=ControllerConfig.from_properties(doc["controller"]),
        bootstrap_servers=str(kafka.get("bootstrap_servers", "")),
        events_topic=str(kafka.get("events_topic", "controller-events")),
        decisions_topic=str(kafka.get("decisions_topic", "controller-decisions")),
        kafka_options=dict(kafka.get("options", {})),
        max_offsets_per_trigger=int(job.get("max_offsets_per_trigger", 0)) or None,
        use_jvm_kafka=bool(kafka.get("use_jvm_connector", False)),
        trigger_interval=str(job.get("trigger_interval", "1 second")),
        shuffle_partitions=shuffle,
        partition_buckets=int(job.get("partition_buckets", 0)),
        limits=InputLimits(**{k: int(v) for k, v in doc["input"].items()}),
        dlq_max_value_bytes=int(job.get("dlq_max_value_bytes", 900_000)),
    )
    return settings, {k: str(v) for k, v in spark.items()}, master
