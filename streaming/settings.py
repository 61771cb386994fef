"""Settings of `shadow-controller run`: a TOML file in conf/ plus `--set SECTION.KEY=VALUE`.

Every setting has one flat dotted name, its TOML section and key joined: `job.input`,
`input.max_depth`, `kafka.events_topic`, `controller.unclean.leader.election.enable`.
Two sections are open-ended, because their keys belong to someone else:
`kafka.options.*` is passed to the Kafka clients as-is, and `spark.*` (any dotted Spark
name: `spark.sql.shuffle.partitions`, `spark.driver.memory`) to Spark, next to
`spark.master`. Every other name is in `SCHEMA`, which says how its value is checked and
which `JobSettings` field it sets; anything else is refused with the closest valid name.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from state_machines.model import ControllerConfig

from .exits import UsageError

if TYPE_CHECKING:
    from .job import JobSettings

DEFAULT_FILE = Path(__file__).resolve().parents[1] / "conf" / "shadow-controller.toml"
DEFAULT_MASTER = "local[2]"
SECTIONS = ("job", "input", "kafka", "spark", "controller")
OPTIONS = "kafka.options."  # free-form Kafka client config
SPARK = "spark."  # Spark conf, by Spark's own names


class SettingError(UsageError):
    """A setting that does not exist, or a value that is not of its kind."""


# -- kinds of value: each check takes (name, value) and returns the value to use ----------

Check = Callable[[str, Any], Any]


def boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SettingError(f"{name} must be true or false, got {value!r}")


def integer(minimum: int) -> Check:
    def check(name: str, value: Any) -> int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        try:
            if isinstance(value, (bool, float)):
                raise ValueError
            number = int(value)
        except (TypeError, ValueError):
            raise SettingError(f"{name} must be a whole number, got {value!r}") from None
        if number < minimum:
            raise SettingError(f"{name} must be at least {minimum}, got {number}")
        return number

    return check


count = integer(0)


def cap(name: str, value: Any) -> int | None:
    """A count where 0 means no cap."""
    return count(name, value) or None


def seconds(name: str, value: Any) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
    except (TypeError, ValueError):
        raise SettingError(f"{name} must be a number of seconds, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise SettingError(f"{name} must be a positive number of seconds, got {value!r}")
    return number


def text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise SettingError(f"{name} must be a string, got {value!r}")


def choice(*options: str) -> Check:
    def check(name: str, value: Any) -> str:
        if value not in options:
            raise SettingError(f"{name} must be {' or '.join(options)}, got {value!r}")
        return value

    return check


def location(name: str, value: Any) -> str:
    """Where the job reads or writes: `kafka`, or `file:DIR`."""
    if value == "kafka" or (isinstance(value, str) and value.startswith("file:") and value[5:].strip()):
        return value
    raise SettingError(f"{name} must be kafka or file:DIR, got {value!r}")


def offsets(name: str, value: Any) -> str:
    """Spark's startingOffsets: earliest, latest, or {"topic": {"partition": offset}}."""
    if value in ("earliest", "latest"):
        return value
    try:
        doc = json.loads(value) if isinstance(value, str) else value
        ok = isinstance(doc, dict) and all(
            isinstance(parts, dict) and all(p.lstrip("-").isdigit() and type(o) is int for p, o in parts.items())
            for parts in doc.values())
    except ValueError:
        ok = False
    if not ok:
        raise SettingError(f'{name} must be earliest, latest or JSON like {{"topic": {{"0": 42}}}}, got {value!r}')
    return value if isinstance(value, str) else json.dumps(value)


# Spark's interval units (IntervalUtils.stringToInterval, singular or plural; no
# abbreviations); a processing-time trigger refuses months and years.
_INTERVAL = re.compile(r"(interval\s+)?(\d+(\.\d+)?\s*(week|day|hour|minute|second|millisecond|microsecond)s?\s*)+",
                       re.IGNORECASE)


def interval(name: str, value: Any) -> str:
    if not (isinstance(value, str) and _INTERVAL.fullmatch(value.strip())):
        raise SettingError(f"{name} must be an interval like '1 second' or '500 milliseconds', got {value!r}")
    return value


# -- the schema ----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    check: Check
    # what it sets: a JobSettings field, `limits.<field>` (InputLimits), `controller.<field>`
    # (ControllerConfig); None for a setting that is not part of JobSettings
    field: str | None = None
    # only for JobSettings fields that have no default of their own
    default: Any = None


SCHEMA = (
    Setting("job.input", location, "input", default="kafka"),
    Setting("job.output", location, "output", default="kafka"),
    Setting("job.checkpoint", text, "checkpoint", default="checkpoints/shadow-controller"),
    Setting("job.trigger_interval", interval, "trigger_interval"),
    Setting("job.max_offsets_per_trigger", cap, "max_offsets_per_trigger"),
    Setting("job.partition_buckets", count, "partition_buckets"),
    Setting("job.starting_offsets", offsets, "starting_offsets"),
    Setting("job.stop_timeout_seconds", seconds, "stop_timeout_s"),
    Setting("job.on_broker_outage", choice("wait", "exit"), "on_broker_outage"),
    Setting("job.outage_exit_after_seconds", seconds, "outage_exit_after_s"),
    Setting("job.heartbeat_seconds", seconds, "heartbeat_s"),
    Setting("job.dlq_max_value_bytes", count, "dlq_max_value_bytes"),
    Setting("input.max_record_bytes", integer(1), "limits.max_record_bytes"),
    Setting("input.max_depth", integer(1), "limits.max_depth"),
    Setting("input.max_number_digits", integer(1), "limits.max_number_digits"),
    Setting("input.max_id_chars", integer(1), "limits.max_id_chars"),
    Setting("kafka.bootstrap_servers", text, "bootstrap_servers"),
    Setting("kafka.events_topic", text, "events_topic"),
    Setting("kafka.decisions_topic", text, "decisions_topic"),
    Setting("kafka.use_jvm_connector", boolean, "use_jvm_kafka"),
    Setting("spark.master", text),
    Setting("spark.sql.shuffle.partitions", integer(1), "shuffle_partitions"),
    # the names ControllerConfig.from_properties reads (Kafka's)
    Setting("controller.unclean.leader.election.enable", boolean, "controller.unclean_leader_election_enable"),
    Setting("controller.auto.leader.rebalance.enable", boolean, "controller.auto_leader_rebalance_enable"),
    Setting("controller.leader.imbalance.per.broker.percentage", count,
            "controller.leader_imbalance_per_broker_percentage"),
    Setting("controller.delete.topic.enable", boolean, "controller.delete_topic_enable"),
    Setting("controller.leader.recovery.supported", boolean, "controller.leader_recovery_supported"),
    Setting("controller.shadow.follow", boolean, "controller.shadow_follow"),
)
SETTINGS = {s.name: s for s in SCHEMA}

# Names a Spark or Kafka user would guess, for the same settings.
ALIASES = {
    "kafka.bootstrap.servers": "kafka.bootstrap_servers",
    "kafka.subscribe": "kafka.events_topic",
    "job.subscribe": "kafka.events_topic",
    "job.startingOffsets": "job.starting_offsets",
    "job.maxOffsetsPerTrigger": "job.max_offsets_per_trigger",
    "job.checkpointLocation": "job.checkpoint",
}


def canonical(name: str) -> str:
    """The setting `name` stands for, or SettingError naming the closest valid one."""
    name = ALIASES.get(name, name)
    if name.startswith(SPARK + SPARK):  # [spark] "spark.x" in the file, or --set spark.spark.x
        name = name[len(SPARK):]
    if name in SETTINGS or _free_form(name):
        return name
    raise SettingError(_unknown(name))


def _free_form(name: str) -> bool:
    if name.startswith(OPTIONS):
        return len(name) > len(OPTIONS)
    if name.startswith(SPARK) and "." in name[len(SPARK):]:
        # a near miss of a setting this job reads is a typo, not another Spark setting
        typed = [n for n in SETTINGS if n.startswith(SPARK)]
        return not difflib.get_close_matches(name, typed, n=1, cutoff=0.9)
    return False


def _unknown(name: str) -> str:
    close = difflib.get_close_matches(name, [*SETTINGS, *ALIASES], n=1, cutoff=0.6)
    if close:
        return f"unknown setting {name}; did you mean {close[0]}?"
    section = name.split(".", 1)[0]
    if section not in SECTIONS:
        return f"unknown setting {name}; sections are {', '.join(SECTIONS)}"
    keys = [n.split(".", 1)[1] for n in SETTINGS if n.startswith(section + ".")]
    return f"unknown setting {name}; [{section}] has {', '.join(keys)}"


def check(name: str, value: Any) -> tuple[str, Any]:
    """(canonical name, checked value) of one setting."""
    name = canonical(name)
    setting = SETTINGS.get(name)
    return name, setting.check(name, value) if setting else text(name, value)


# -- reading -------------------------------------------------------------------------------

def parse_override(item: str) -> tuple[str, Any]:
    """`--set SECTION.KEY=VALUE` as (name, value); VALUE is read as a TOML value (true, 8,
    "x") and taken as a string when it is not one."""
    name, sep, raw = item.partition("=")
    if not sep or "." not in name.strip():
        raise SettingError(f"--set expects SECTION.KEY=VALUE, got {item!r}")
    try:
        value = tomllib.loads(f"x = {raw}")["x"]
    except tomllib.TOMLDecodeError:
        value = raw
    return name.strip(), value


def read_toml(path: str | Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise SettingError(f"{path}: no such settings file") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise SettingError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise SettingError(f"{path}: cannot read: {exc.strerror}") from None


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    # TOML reads a bare dotted key as nested tables; Kafka and Spark names are dotted. A
    # setting whose value may itself be a table (starting_offsets) is not descended into.
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and name not in SETTINGS:
            yield from _flatten(value, name + ".")
        else:
            yield name, value


def check_all(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Checked settings by canonical name; a later pair overrides an earlier one."""
    return dict(check(name, value) for name, value in pairs)


def read_file(path: str | Path) -> dict[str, Any]:
    """The checked settings of one TOML file; a setting named twice (by an alias) is refused."""
    values: dict[str, Any] = {}
    written: dict[str, str] = {}
    for name, value in _flatten(read_toml(path)):
        try:
            key, checked = check(name, value)
        except SettingError as exc:
            raise SettingError(f"{path}: {exc}") from None
        if key in written:
            raise SettingError(f"{path}: {written[key]} and {name} are the same setting; keep one")
        values[key], written[key] = checked, name
    return values


def load(path: str | Path | None, overrides: Iterable[tuple[str, Any]] = ()) -> dict[str, Any]:
    """The file's settings (default: conf/shadow-controller.toml), then the overrides, as
    {canonical name: checked value}."""
    return {**read_file(path or DEFAULT_FILE), **check_all(overrides)}


def read_controller_config(path: str | Path) -> ControllerConfig:
    """Cluster-level controller settings from a TOML file's [controller] table (or its top
    level), e.g. `unclean.leader.election.enable = true`."""
    doc = read_toml(path)
    table = doc.get("controller", doc)
    try:
        values = check_all((f"controller.{k}", v) for k, v in _flatten(table))
    except SettingError as exc:
        raise SettingError(f"{path}: {exc}") from None
    return apply_controller(ControllerConfig(), values)


# -- applying ------------------------------------------------------------------------------

def _changes(values: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """The fields of `owner` ("" for JobSettings itself, "limits", "controller") set by `values`."""
    out = {}
    for name, value in values.items():
        field = SETTINGS[name].field if name in SETTINGS else None
        if field and field.rpartition(".")[0] == owner:
            out[field.rpartition(".")[2]] = value
    return out


def apply_controller(config: ControllerConfig, values: Mapping[str, Any]) -> ControllerConfig:
    return dataclasses.replace(config, **_changes(values, "controller"))


def apply(settings: "JobSettings", values: Mapping[str, Any]) -> "JobSettings":
    """`settings` with `values` (checked, by canonical name) applied."""
    options = {name[len(OPTIONS):]: value for name, value in values.items() if name.startswith(OPTIONS)}
    return dataclasses.replace(
        settings, **_changes(values, ""),
        limits=dataclasses.replace(settings.limits, **_changes(values, "limits")),
        controller=apply_controller(settings.controller, values),
        kafka_options={**settings.kafka_options, **options},
    )


def spark_conf(values: Mapping[str, Any]) -> dict[str, str]:
    return {name: str(value) for name, value in values.items() if name.startswith(SPARK) and name != "spark.master"}


def master(values: Mapping[str, Any]) -> str:
    return str(values.get("spark.master", DEFAULT_MASTER))


def job_settings(values: Mapping[str, Any]) -> tuple["JobSettings", dict[str, str], str]:
    """(JobSettings, Spark conf, Spark master) of checked settings."""
    from .job import JobSettings  # Spark is imported only when a job is built

    base = JobSettings(**{s.field: s.default for s in SCHEMA if s.field and s.default is not None})
    return apply(base, values), spark_conf(values), master(values)
