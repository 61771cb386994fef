"""Settings of `shadow-controller run`: `JobSettings`, read from a TOML file in conf/ plus
`--set SECTION.KEY=VALUE`.

Every setting has one flat dotted name, its TOML section and key joined: `job.input`,
`input.max_depth`, `kafka.events_topic`, `controller.unclean.leader.election.enable`.
Two sections are open-ended, because their keys belong to someone else:
`kafka.options.*` is passed to the Kafka clients as-is, and `spark.*` (any dotted Spark
name: `spark.sql.shuffle.partitions`, `spark.driver.memory`) to Spark, next to
`spark.master`. Every other name is in `SCHEMA`, which says how its value is checked
(`kinds.py`) and which `JobSettings` field it sets; anything else is refused with the
closest valid name. What a checkpoint keeps of them is `checkpoint.py`'s.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from state_machines.events import DEFAULT_LIMITS, InputLimits
from state_machines.model import ControllerConfig

from .kinds import (
    Check,
    SettingError,
    auto_count,
    boolean,
    cap,
    choice,
    count,
    input_location,
    integer,
    interval,
    location,
    metadata_version,
    offsets,
    port,
    seconds,
    text,
)

# The default settings file, found beside the package (never in the working directory), so a
# command reads the same defaults wherever it is run from. An installation without it (a
# wheel carries no conf/) runs on the built-in defaults, the SCHEMA's, and says so
# (`default_file_note`).
DEFAULT_FILE = Path(__file__).resolve().parents[2] / "conf" / "shadow-controller.toml"
DEFAULT_MASTER = "local[2]"
SECTIONS = ("job", "input", "kafka", "spark", "controller")
OPTIONS = "kafka.options."  # free-form Kafka client config
SPARK = "spark."  # Spark conf, by Spark's own names


@dataclass
class JobSettings:
    input: str  # file:DIR | kafka | metadata-log:DIR
    output: str  # file:DIR | kafka
    checkpoint: str
    controller: ControllerConfig = dataclasses.field(default_factory=ControllerConfig)
    bootstrap_servers: str = ""
    events_topic: str = "controller-events"
    decisions_topic: str = "controller-decisions"
    kafka_options: dict[str, str] = dataclasses.field(default_factory=dict)
    max_offsets_per_trigger: int | None = None
    use_jvm_kafka: bool = False
    trigger_interval: str = "1 second"
    shuffle_partitions: int = 2
    # scale mode: pack partitions into this many Spark groups (0: one group per partition).
    # Frozen into a checkpoint, like spark.sql.shuffle.partitions.
    partition_buckets: int = 0
    # mirrors of the sequencer's key in the other shuffle partitions, which keep every Python
    # worker of its stage holding the directory (operators.mirror_keys); None: one per other
    # partition when Spark runs in local mode (one pool of workers), none on a cluster
    sequencer_mirrors: int | None = None
    # bounds on one input record (size, nesting, number length, id length): past them the
    # record is a dead letter, never an exception in the job
    limits: InputLimits = DEFAULT_LIMITS
    # a dead letter keeps at most this many bytes of the original record (a prefix, with
    # its size and digest in headers); below the producer's default message.max.bytes
    dlq_max_value_bytes: int = 900_000
    # where a new checkpoint starts reading the events topic: "earliest", "latest" or
    # Spark's JSON form; a checkpoint that exists resumes from its own offsets
    starting_offsets: str = "earliest"
    # a stop (SIGTERM, SIGINT) lets the running micro-batch commit for at most this long,
    # then abandons it (a restart replays it): the job always exits within about this bound
    stop_timeout_s: float = 30.0
    # a broker that does not answer: "wait" (with backoff, one log line a minute, resuming
    # by itself) or "exit" (code 5 after `outage_exit_after_s`)
    on_broker_outage: str = "wait"
    outage_exit_after_s: float = 120.0
    # an idle job logs one line (source offsets and lag) this often
    heartbeat_s: float = 60.0
    # serve Kafka's controller metrics for Prometheus on this port (streaming/prometheus.py);
    # None: no endpoint
    metrics_port: int | None = None
    # the address the endpoint listens on: loopback by default (this machine only); "0.0.0.0"
    # (or "::") is every interface, for a Prometheus on another host or container
    metrics_host: str = "127.0.0.1"

    @property
    def dlq_topic(self) -> str:
        return f"{self.events_topic}.dlq"

    @property
    def feedback_dir(self) -> str:
        return os.path.join(self.checkpoint, "feedback")

    @property
    def pause_file(self) -> str:
        """While it exists, the sources admit no new events (a clean stop in progress)."""
        return os.path.join(self.checkpoint, "STOPPING")


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
    Setting("job.input", input_location, "input", default="kafka"),
    Setting("job.output", location, "output", default="kafka"),
    Setting("job.checkpoint", text, "checkpoint", default="checkpoints/shadow-controller"),
    Setting("job.trigger_interval", interval, "trigger_interval"),
    Setting("job.max_offsets_per_trigger", cap, "max_offsets_per_trigger"),
    Setting("job.partition_buckets", count, "partition_buckets"),
    Setting("job.sequencer_mirrors", auto_count, "sequencer_mirrors"),
    Setting("job.starting_offsets", offsets, "starting_offsets"),
    Setting("job.stop_timeout_seconds", seconds, "stop_timeout_s"),
    Setting("job.on_broker_outage", choice("wait", "exit"), "on_broker_outage"),
    Setting("job.outage_exit_after_seconds", seconds, "outage_exit_after_s"),
    Setting("job.heartbeat_seconds", seconds, "heartbeat_s"),
    Setting("job.metrics_port", port, "metrics_port"),
    Setting("job.metrics_host", text, "metrics_host"),
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
    Setting(
        "controller.unclean.leader.election.enable",
        boolean,
        "controller.unclean_leader_election_enable",
    ),
    Setting(
        "controller.auto.leader.rebalance.enable",
        boolean,
        "controller.auto_leader_rebalance_enable",
    ),
    Setting(
        "controller.leader.imbalance.per.broker.percentage",
        count,
        "controller.leader_imbalance_per_broker_percentage",
    ),
    Setting(
        "controller.leader.imbalance.check.interval.seconds",
        integer(1),
        "controller.leader_imbalance_check_interval_seconds",
    ),
    Setting("controller.delete.topic.enable", boolean, "controller.delete_topic_enable"),
    Setting(
        "controller.leader.recovery.supported", boolean, "controller.leader_recovery_supported"
    ),
    Setting("controller.shadow.follow", boolean, "controller.shadow_follow"),
    Setting("controller.emit.update.metadata", boolean, "controller.emit_update_metadata"),
    Setting("controller.min.insync.replicas", integer(1), "controller.min_insync_replicas"),
    # the rule set (state_machines/rule_sets.py), and what the KRaft rules depend on
    Setting("controller.mode", choice("zk", "kraft"), "controller.mode"),
    Setting("controller.metadata.version", metadata_version, "controller.metadata_version"),
    Setting(
        "controller.eligible.leader.replicas.version",
        integer(0),
        "controller.eligible_leader_replicas_version",
    ),
    Setting(
        "controller.unclean.leader.election.interval.ms",
        integer(1),
        "controller.unclean_leader_election_interval_ms",
    ),
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
        name = name[len(SPARK) :]
    if name in SETTINGS or _free_form(name):
        return name
    raise SettingError(_unknown(name))


def _free_form(name: str) -> bool:
    if name.startswith(OPTIONS):
        return len(name) > len(OPTIONS)
    if name.startswith(SPARK) and "." in name[len(SPARK) :]:
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
    """The file's settings (default: `DEFAULT_FILE`, or none when it is missing: the
    built-in defaults), then the overrides, as {canonical name: checked value}."""
    if path is None and not DEFAULT_FILE.is_file():
        return check_all(overrides)
    return {**read_file(path or DEFAULT_FILE), **check_all(overrides)}


def default_file_note(path: str | Path | None) -> str | None:
    """What to tell the user when `load(path)` falls back to the built-in defaults, or None
    when a settings file is read."""
    if path is not None or DEFAULT_FILE.is_file():
        return None
    return (
        f"no settings file at {DEFAULT_FILE} (the default); using the built-in defaults "
        "(give --config FILE to read one)"
    )


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
    try:
        return dataclasses.replace(config, **_changes(values, "controller"))
    except ValueError as exc:  # settings that are valid alone but not together
        raise SettingError(f"controller: {exc}") from None


def apply(settings: JobSettings, values: Mapping[str, Any]) -> JobSettings:
    """`settings` with `values` (checked, by canonical name) applied."""
    options = {
        name[len(OPTIONS) :]: value for name, value in values.items() if name.startswith(OPTIONS)
    }
    out = dataclasses.replace(
        settings,
        **_changes(values, ""),
        limits=dataclasses.replace(settings.limits, **_changes(values, "limits")),
        controller=apply_controller(settings.controller, values),
        kafka_options={**settings.kafka_options, **options},
    )
    if out.input.startswith("metadata-log:") and out.controller.mode != "kraft":
        # a KRaft cluster's own log: only the KRaft rules read it
        out = dataclasses.replace(
            out, controller=apply_controller(out.controller, {"controller.mode": "kraft"})
        )
    return out


def spark_conf(values: Mapping[str, Any]) -> dict[str, str]:
    return {
        name: str(value)
        for name, value in values.items()
        if name.startswith(SPARK) and name != "spark.master"
    }


def master(values: Mapping[str, Any]) -> str:
    return str(values.get("spark.master", DEFAULT_MASTER))


def job_settings(values: Mapping[str, Any]) -> tuple[JobSettings, dict[str, str], str]:
    """(JobSettings, Spark conf, Spark master) of checked settings."""
    base = JobSettings(**{s.field: s.default for s in SCHEMA if s.field and s.default is not None})
    return apply(base, values), spark_conf(values), master(values)


def with_overrides(
    settings: JobSettings, overrides: list[str]
) -> tuple[JobSettings, dict[str, str], str]:
    """`settings` with `--set SECTION.KEY=VALUE` overrides applied as `shadow-controller run`
    applies them to its TOML file: (settings, Spark conf, master)."""
    values = check_all(parse_override(item) for item in overrides)
    return apply(settings, values), spark_conf(values), master(values)
