"""Settings of `shadow-controller run`: one schema (streaming/settings/schema.py) that every key of
every section is checked against, typed values, the names a Spark or Kafka user would guess,
and the checkpoint's record of its settings and input."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from shadow_controller.replay import branch_settings
from state_machines.events import InputLimits
from state_machines.model import ControllerConfig
from streaming.exits import USAGE, UsageError
from streaming.settings import schema as settings
from streaming.settings.checkpoint import (
    SETTINGS_FILE,
    CheckpointMismatch,
    check_frozen,
    check_source,
    load_settings,
    save_settings,
)
from streaming.settings.kinds import SettingError
from streaming.settings.schema import SCHEMA, JobSettings, with_overrides

ROOT = Path(__file__).resolve().parents[2]


def run_settings(
    *overrides: str, path: str | Path | None = None
) -> tuple[JobSettings, dict[str, str], str]:
    return settings.job_settings(
        settings.load(path, [settings.parse_override(o) for o in overrides])
    )


# -- the schema is the one list of settings --------------------------------------------------


def test_every_job_setting_has_exactly_one_key() -> None:
    own = {f.name for f in dataclasses.fields(JobSettings)} - {
        "controller",
        "limits",
        "kafka_options",
    }
    fields = [s.field for s in SCHEMA if s.field]
    assert len(fields) == len(set(fields))
    assert own == {f for f in fields if "." not in f}
    assert {f.name for f in dataclasses.fields(InputLimits)} == {
        f[len("limits.") :] for f in fields if f.startswith("limits.")
    }
    assert {f.name for f in dataclasses.fields(ControllerConfig)} == {
        f[len("controller.") :] for f in fields if f.startswith("controller.")
    }


@pytest.mark.parametrize(
    "setting", [s for s in SCHEMA if s.name.startswith("controller.")], ids=lambda s: s.name
)
def test_controller_keys_are_the_names_controller_config_reads(setting) -> None:
    """Each [controller] key sets the same field as ControllerConfig.from_properties does
    for that Kafka name."""
    key = setting.name[len("controller.") :]
    field = setting.field.split(".", 1)[1]
    default = getattr(ControllerConfig(), field)
    # another valid value; ELR needs a metadata.version that supports it
    other = {
        "mode": "kraft",
        "metadata.version": "3.8-IV0",
        "eligible.leader.replicas.version": 1,
    }.get(
        key,
        (not default)
        if isinstance(default, bool)
        else default + 7
        if isinstance(default, int)
        else None,
    )
    extra = {"metadata.version": "4.0-IV1"} if key == "eligible.leader.replicas.version" else {}
    assert ControllerConfig.from_properties({key: other, **extra}) == settings.apply_controller(
        ControllerConfig(),
        {setting.name: other, **{f"controller.{k}": v for k, v in extra.items()}},
    )


def test_the_shipped_files_are_valid_and_state_the_defaults() -> None:
    job, spark_conf, master = run_settings(path=ROOT / "conf" / "shadow-controller.toml")
    defaults = JobSettings(
        input="kafka",
        output="kafka",
        checkpoint="checkpoints/shadow-controller",
        bootstrap_servers="127.0.0.1:9092",
    )
    assert job == defaults
    assert (
        spark_conf == {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "2g"}
        and master == "local[2]"
    )
    assert settings.read_controller_config(ROOT / "conf" / "controller.toml") == ControllerConfig()


# -- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "alias, value, field, expected",
    [
        ("kafka.bootstrap.servers", '"b1:9092,b2:9092"', "bootstrap_servers", "b1:9092,b2:9092"),
        ("kafka.subscribe", "events", "events_topic", "events"),
        ("job.subscribe", "events", "events_topic", "events"),
        ("job.startingOffsets", "latest", "starting_offsets", "latest"),
        ("job.maxOffsetsPerTrigger", "500", "max_offsets_per_trigger", 500),
        ("job.checkpointLocation", "/tmp/ck", "checkpoint", "/tmp/ck"),
    ],
)
def test_aliases_set_the_same_setting(alias: str, value: str, field: str, expected: Any) -> None:
    assert getattr(run_settings(f"{alias}={value}")[0], field) == expected
    canonical = settings.ALIASES[alias]
    assert run_settings(f"{alias}={value}") == run_settings(f"{canonical}={value}")


@pytest.mark.parametrize(
    "override",
    [
        "spark.sql.shuffle.partitions=8",
        "spark.spark.sql.shuffle.partitions=8",
        'spark.sql.shuffle.partitions="8"',
    ],
)
def test_spark_settings_by_their_own_names(override: str) -> None:
    job, spark_conf, _ = run_settings(override)
    assert job.shuffle_partitions == 8 and spark_conf["spark.sql.shuffle.partitions"] == "8"


def test_spark_keys_in_the_file_with_or_without_their_prefix(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[spark]\nmaster = "local[4]"\nsql.shuffle.partitions = 3\n"spark.executor.cores" = 2\n'
    )
    job, spark_conf, master = run_settings(path=path)
    assert (job.shuffle_partitions, master) == (3, "local[4]")
    assert spark_conf == {"spark.sql.shuffle.partitions": "3", "spark.executor.cores": "2"}


def test_free_form_sections_pass_through_as_strings(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[kafka.options]\n"security.protocol" = "SASL_SSL"\n"enable.idempotence" = true\n'
    )
    job, spark_conf, _ = run_settings(
        "spark.sql.adaptive.enabled=false", "kafka.options.linger.ms=10", path=path
    )
    assert job.kafka_options == {
        "security.protocol": "SASL_SSL",
        "enable.idempotence": "true",
        "linger.ms": "10",
    }
    assert spark_conf == {"spark.sql.adaptive.enabled": "false"}


@pytest.mark.parametrize(
    "name, suggestion",
    [
        ("job.nosuch", "job.input"),
        ("job.checkpoint_location", "job.checkpointLocation"),
        ("kafka.bootstrap_server", "kafka.bootstrap_servers"),
        ("input.max_bytes", "input.max_record_bytes"),
        ("controller.unclean.leader.election", "controller.unclean.leader.election.enable"),
        ("spark.mastr", "spark.master"),
        ("spark.sql.shuffle.partition", "spark.sql.shuffle.partitions"),
    ],
)
def test_an_unknown_setting_names_the_closest(name: str, suggestion: str) -> None:
    with pytest.raises(
        SettingError, match=f"^unknown setting {name}; did you mean {suggestion}\\?$"
    ):
        settings.canonical(name)


def test_an_unknown_setting_without_a_close_name_lists_its_section() -> None:
    with pytest.raises(
        SettingError,
        match=r"unknown setting job.zzzzzzzzzzzz; \[job\] has input, output, checkpoint",
    ):
        settings.canonical("job.zzzzzzzzzzzz")
    assert SettingError("x").exit_code == USAGE


# -- values -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "override, message",
    [
        ("controller.unclean.leader.election.enable=maybe", "must be true or false, got 'maybe'"),
        ("controller.unclean.leader.election.enable=1", "must be true or false, got 1"),
        ("kafka.use_jvm_connector=yes", "must be true or false"),
        ("job.partition_buckets=2.5", "must be a whole number, got 2.5"),
        ("job.partition_buckets=true", "must be a whole number, got True"),
        ("job.sequencer_mirrors=-1", "must be auto or a whole number, got -1"),
        ("job.sequencer_mirrors=some", "must be auto or a whole number, got 'some'"),
        ("spark.sql.shuffle.partitions=0", "must be at least 1, got 0"),
        ("input.max_depth=0", "must be at least 1"),
        (
            "controller.min.insync.replicas=0",
            "controller.min.insync.replicas must be at least 1, got 0",
        ),
        (
            "controller.min.insync.replicas=two",
            "controller.min.insync.replicas must be a whole number, got 'two'",
        ),
        ("job.stop_timeout_seconds=-1", "must be a positive number of seconds"),
        ("job.heartbeat_seconds=nan", "must be a positive number of seconds"),
        ("job.heartbeat_seconds=soon", "must be a number of seconds, got 'soon'"),
        ("job.on_broker_outage=Exit", "must be wait or exit, got 'Exit'"),
        ("job.output=files:/tmp/out", "must be kafka or file:DIR"),
        ("job.input=file:", "must be kafka, file:DIR or metadata-log:DIR"),
        ("job.trigger_interval=1 month", "must be an interval"),
        ('job.starting_offsets={"t": {"0": "x"}}', "must be earliest, latest or JSON"),
        ("kafka.events_topic=[1, 2]", "must be a string"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused(override: str, message: str) -> None:
    with pytest.raises(SettingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_settings(override)


@pytest.mark.parametrize(
    "override, field, expected",
    [
        (
            "controller.unclean.leader.election.enable=true",
            "controller",
            ControllerConfig(unclean_leader_election_enable=True),
        ),
        ('controller.unclean.leader.election.enable="false"', "controller", ControllerConfig()),
        ("controller.min.insync.replicas=2", "controller", ControllerConfig(min_insync_replicas=2)),
        ("job.max_offsets_per_trigger=0", "max_offsets_per_trigger", None),
        ("job.stop_timeout_seconds=5", "stop_timeout_s", 5.0),
        ("job.outage_exit_after_seconds=2.5", "outage_exit_after_s", 2.5),
        ("job.heartbeat_seconds=30", "heartbeat_s", 30.0),
        ("job.on_broker_outage=exit", "on_broker_outage", "exit"),
        ("job.trigger_interval=500 milliseconds", "trigger_interval", "500 milliseconds"),
        ('job.starting_offsets={"events": {"0": 42}}', "starting_offsets", '{"events": {"0": 42}}'),
        ("input.max_depth=8", "limits", InputLimits(max_depth=8)),
        ("job.sequencer_mirrors=auto", "sequencer_mirrors", None),
        ("job.sequencer_mirrors=0", "sequencer_mirrors", 0),
    ],
)
def test_values_land_in_their_fields(override: str, field: str, expected: Any) -> None:
    assert getattr(run_settings(override)[0], field) == expected


def test_starting_offsets_as_a_toml_table(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[job.starting_offsets]\nevents = { "0" = 7 }\n')
    assert json.loads(run_settings(path=path)[0].starting_offsets) == {"events": {"0": 7}}


def test_a_file_naming_one_setting_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[kafka]\nbootstrap_servers = "a:1"\nbootstrap.servers = "b:1"\n')
    with pytest.raises(
        SettingError,
        match="kafka.bootstrap_servers and kafka.bootstrap.servers are the same setting",
    ):
        settings.load(path)


def test_an_override_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[kafka]\nbootstrap_servers = "a:1"\n')
    assert run_settings("kafka.bootstrap.servers=b:2", path=path)[0].bootstrap_servers == "b:2"


@pytest.mark.parametrize(
    "text, message",
    [
        ("[job\n", "not valid TOML: .*line 1"),
        ('[job]\ninput = "kafka"\ninput = "kafka"\n', "not valid TOML: .*line 3"),
        ("[controller]\nunclean = true\n", "unknown setting controller.unclean; did you mean"),
        ("nosuch = 1\n", "unknown setting nosuch"),
    ],
)
def test_file_errors_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.toml"
    path.write_text(text)
    with pytest.raises(SettingError, match=f"^{path}: {message}"):
        settings.load(path)


# -- the checkpoint's settings and input ---------------------------------------------------------


def test_overrides_of_a_saved_run_keep_everything_else(tmp_path: Path) -> None:
    original = JobSettings(
        input="kafka",
        output="kafka",
        checkpoint="c",
        starting_offsets="latest",
        heartbeat_s=5.0,
        kafka_options={"security.protocol": "SSL"},
        limits=InputLimits(max_depth=9),
    )
    new, spark_conf, master = with_overrides(
        original,
        [
            "controller.unclean.leader.election.enable=true",
            "kafka.options.sasl.mechanism=PLAIN",
            "spark.master=local[1]",
        ],
    )
    assert new == dataclasses.replace(
        original,
        controller=ControllerConfig(unclean_leader_election_enable=True),
        kafka_options={"security.protocol": "SSL", "sasl.mechanism": "PLAIN"},
    )
    assert (spark_conf, master) == ({}, "local[1]")


def test_the_branch_cannot_move_its_checkpoint_by_any_name(tmp_path: Path) -> None:
    original = JobSettings(input="file:in", output="file:out", checkpoint="c")
    for name in ("job.checkpoint", "job.checkpointLocation"):
        with pytest.raises(UsageError, match="job.checkpoint cannot be set"):
            branch_settings(original, str(tmp_path / "b"), [f"{name}=/tmp/x"])
    with pytest.raises(UsageError, match="shuffle_partitions is frozen"):
        branch_settings(original, str(tmp_path / "b"), ["spark.sql.shuffle.partitions=8"])


def test_saved_settings_come_back_whole(tmp_path: Path) -> None:
    job = JobSettings(
        input=f"file:{tmp_path}/in",
        output="kafka",
        checkpoint=str(tmp_path),
        starting_offsets="latest",
        limits=InputLimits(max_id_chars=12),
        controller=ControllerConfig(shadow_follow=False),
    )
    save_settings(job, str(tmp_path))
    assert load_settings(str(tmp_path)) == job


def test_a_new_shuffle_partition_count_is_refused_by_the_frozen_check(tmp_path: Path) -> None:
    job, _, _ = run_settings(f"job.input=file:{tmp_path}", f"job.checkpoint={tmp_path}/ck")
    save_settings(job, job.checkpoint)
    os.makedirs(os.path.join(job.checkpoint, "query"))
    moved, _, _ = run_settings(
        f"job.input=file:{tmp_path}",
        f"job.checkpoint={tmp_path}/ck",
        "spark.sql.shuffle.partitions=8",
    )
    with pytest.raises(
        CheckpointMismatch, match="shuffle_partitions is frozen .* cannot be changed to 8"
    ):
        check_frozen(moved, job.checkpoint)


def kafka_job(ckpt: Path, servers: str, topic: str = "events") -> JobSettings:
    return JobSettings(
        input="kafka",
        output="kafka",
        checkpoint=str(ckpt),
        bootstrap_servers=servers,
        events_topic=topic,
    )


def test_the_checkpoint_records_its_input_and_refuses_another(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    ckpt = tmp_path / "ck"
    first = JobSettings(input="file:in", output="file:out", checkpoint=str(ckpt))
    save_settings(first, str(ckpt))
    assert json.loads((ckpt / SETTINGS_FILE).read_text())["source"] == f"file:{tmp_path}/in"
    check_source(
        dataclasses.replace(first, input=f"file:{tmp_path}/in/"), str(ckpt)
    )  # the same directory
    with pytest.raises(
        CheckpointMismatch, match=f"reads file:{tmp_path}/in, not file:{tmp_path}/other"
    ):
        check_source(dataclasses.replace(first, input="file:other"), str(ckpt))
    with pytest.raises(CheckpointMismatch, match="not kafka topic events at b:1"):
        check_source(kafka_job(ckpt, "b:1"), str(ckpt))


def test_a_kafka_input_is_its_topic_and_its_servers_in_any_order(tmp_path: Path) -> None:
    save_settings(kafka_job(tmp_path, "b:1, a:1"), str(tmp_path))
    check_source(kafka_job(tmp_path, "a:1,b:1"), str(tmp_path))
    with pytest.raises(
        CheckpointMismatch, match="reads kafka topic events at a:1,b:1, not kafka topic other at"
    ):
        check_source(kafka_job(tmp_path, "a:1,b:1", "other"), str(tmp_path))


def test_a_checkpoint_from_before_inputs_were_recorded_is_accepted(tmp_path: Path) -> None:
    save_settings(kafka_job(tmp_path, "a:1"), str(tmp_path))
    doc = json.loads((tmp_path / SETTINGS_FILE).read_text())
    del doc["source"]
    (tmp_path / SETTINGS_FILE).write_text(json.dumps(doc))
    check_source(kafka_job(tmp_path, "elsewhere:1"), str(tmp_path))
