"""Which controller a live cluster runs (`shadow_controller.cluster_rules`), read from a broker's
ApiVersions answer, and the bridge's refusal of a shadow whose settings contradict it.

The answers are Kafka's: a KRaft broker always finalizes `metadata.version`
(`FinalizedFeatures`, 3.9.0), a ZK-mode broker never does and lists the zkBroker-only
LeaderAndIsr API. The loop tests use a reader that answers like one; the real reader
against a real broker is in tests/integration/test_bridge.py."""

from __future__ import annotations

import logging

import pytest

from shadow_controller.bridge import BridgeSettings, detected_line, run_bridge
from shadow_controller.bridge_io import finalized_levels
from shadow_controller.cluster_rules import ClusterRules, check, detect
from state_machines.model import ControllerConfig

# ApiKeys a 3.9 broker lists (abridged), ZK mode adds LeaderAndIsr (4), StopReplica (5),
# UpdateMetadata (6), ControlledShutdown (7); KRaft's broker listener lists none of them.
CLIENT_KEYS = {0, 1, 2, 3, 8, 9, 10, 18, 19, 20, 60, 75}
ZK_KEYS = CLIENT_KEYS | {4, 5, 6, 7}
# the embedded Tansu broker: client APIs, no features (see the integration test)
TANSU_KEYS = CLIENT_KEYS


def kraft(level: int, elr: int | None = None) -> dict[str, int]:
    features = {"metadata.version": level, "kraft.version": 1, "group.version": 1}
    if elr is not None:
        features["eligible.leader.replicas.version"] = elr
    return features


def test_a_kraft_broker_is_known_by_its_finalized_metadata_version():
    rules = detect(kraft(21), CLIENT_KEYS)
    assert rules == ClusterRules("kraft", 21, 0)
    assert rules.metadata_version is not None and rules.metadata_version.value == "3.9-IV0"
    assert rules.settings() == 'mode = "kraft", metadata.version = "3.9-IV0"'
    assert "KRaft at metadata.version 3.9-IV0 (level 21)" in rules.describe()


def test_kafka_4_0s_elr_feature_is_read():
    rules = detect(kraft(25, elr=1), CLIENT_KEYS)
    assert (rules.mode, rules.level, rules.elr) == ("kraft", 25, 1)
    assert (
        rules.settings()
        == 'mode = "kraft", metadata.version = "4.0-IV3", eligible.leader.replicas.version = 1'
    )


def test_a_zk_broker_lists_leader_and_isr_and_finalizes_no_metadata_version():
    assert detect({}, ZK_KEYS) == ClusterRules("zk")
    # ZK mode may finalize other features; metadata.version never (FinalizedFeatures)
    assert detect({"group.version": 1}, ZK_KEYS).mode == "zk"
    assert detect({}, ZK_KEYS).settings() == 'mode = "zk"'


def test_an_answer_with_neither_leaves_the_rules_unknown():
    rules = detect({}, TANSU_KEYS)
    assert rules.mode is None and rules.settings() == ""
    assert "does not say which controller it runs" in rules.describe()


def test_a_level_newer_than_this_build_is_reported_with_the_closest_rules():
    rules = detect(kraft(29), CLIENT_KEYS)
    assert rules.mode == "kraft" and rules.metadata_version is None
    assert "level 29, newer than 4.0-IV3" in rules.describe()
    assert rules.settings() == 'mode = "kraft", metadata.version = "4.0-IV3"'


def test_kafka_pythons_feature_answer_is_read_as_finalized_max_levels():
    answer = {
        "metadata.version": {"supported": (1, 21), "finalized": (1, 21), "finalized_epoch": 7},
        "kraft.version": {"supported": (0, 1)},
    }  # supported, not finalized
    assert finalized_levels(answer) == {"metadata.version": 21}


ZK = ControllerConfig()
KRAFT_39 = ControllerConfig(mode="kraft")


@pytest.mark.parametrize(
    "rules, config, clash",
    [
        (ClusterRules("kraft", 21), ZK, 'the shadow runs controller.mode = "zk"'),
        (ClusterRules("zk"), KRAFT_39, 'the shadow runs controller.mode = "kraft"'),
        (ClusterRules("kraft", 11), KRAFT_39, 'the shadow runs metadata.version = "3.9-IV0"'),
        (
            ClusterRules("kraft", 23, 1),
            ControllerConfig(mode="kraft", metadata_version="4.0-IV1"),
            "the shadow runs eligible.leader.replicas.version = 0",
        ),
        (ClusterRules("kraft", 29), KRAFT_39, 'the shadow runs metadata.version = "3.9-IV0"'),
    ],
)
def test_a_shadow_that_contradicts_the_cluster_is_named(rules, config, clash):
    assert check(rules, config) == clash


@pytest.mark.parametrize(
    "rules, config",
    [
        (ClusterRules("kraft", 21), KRAFT_39),
        (
            ClusterRules("kraft", 21),
            ControllerConfig(mode="kraft", metadata_version="3.9"),
        ),  # a release: its latest
        (ClusterRules("zk"), ZK),
        (
            ClusterRules("zk"),
            ControllerConfig(metadata_version="3.5-IV2"),
        ),  # the ZK rules ignore it
        (ClusterRules(None), ZK),
        (ClusterRules(None), KRAFT_39),
        (ClusterRules("kraft", 29), ControllerConfig(mode="kraft", metadata_version="4.0-IV3")),
    ],
)
def test_a_shadow_that_matches_or_cannot_be_checked_passes(rules, config):
    assert check(rules, config) is None


class AnsweringReader:
    """Answers `read_rules` with each of `answers` in turn (the last one repeats); the
    cluster view itself is never needed, because the tests stop before a poll or on one."""

    def __init__(self, *answers: ClusterRules):
        self.answers = list(answers)
        self.bootstrap_servers = "live:9092"

    def read_rules(self) -> ClusterRules:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def read(self):
        raise AssertionError("the bridge read the cluster's partitions of a shadow it refused")

    def close(self) -> None:
        pass


def test_detect_prints_the_rules_and_the_settings_and_exits(tmp_path):
    printed: list[str] = []
    settings = BridgeSettings("live:9092", state=str(tmp_path / "s.json"), detect=True)
    assert (
        run_bridge(settings, reader=AnsweringReader(ClusterRules("kraft", 21)), out=printed.append)
        == 0
    )
    assert printed == [detected_line("live:9092", ClusterRules("kraft", 21))]
    assert printed[0] == (
        "cluster live:9092 runs KRaft at metadata.version 3.9-IV0 (level 21), "
        "eligible.leader.replicas.version 0; run the shadow with [controller] "
        'mode = "kraft", metadata.version = "3.9-IV0"'
    )
    assert not (tmp_path / "s.json").exists()


def test_a_zk_shadow_of_a_kraft_cluster_is_refused_before_any_event(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="shadow_controller.bridge")
    settings = BridgeSettings(
        "live:9092",
        state=str(tmp_path / "s.json"),
        once=True,
        shadow=ZK,
        shadow_source="conf/shadow-controller.toml",
    )
    assert run_bridge(settings, reader=AnsweringReader(ClusterRules("kraft", 21))) == 2
    [line] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert line == (
        "bridge: cluster live:9092 runs KRaft at metadata.version 3.9-IV0 (level 21), "
        'eligible.leader.replicas.version 0, but the shadow runs controller.mode = "zk" '
        '(conf/shadow-controller.toml); set [controller] mode = "kraft", metadata.version '
        '= "3.9-IV0"; '
        "refusing to feed that shadow"
    )
    assert not (tmp_path / "s.json").exists()


def test_a_metadata_version_upgrade_under_a_running_bridge_stops_it(tmp_path, caplog, monkeypatch):
    """The cluster is checked before every poll: a `kafka-features.sh upgrade` that the shadow's
    settings do not follow stops the bridge with the same line."""
    caplog.set_level(logging.INFO, logger="shadow_controller.bridge")
    polls: list[str] = []
    monkeypatch.setattr(
        "shadow_controller.bridge.poll_once",
        lambda reader, writer, state, clock: polls.append(state) or [],
    )
    monkeypatch.setattr("shadow_controller.bridge.EventsWriter", lambda *args: object())
    settings = BridgeSettings(
        "live:9092",
        state=str(tmp_path / "s.json"),
        shadow=KRAFT_39,
        shadow_source="job.toml",
        tick_interval_s=0,
    )
    reader = AnsweringReader(
        ClusterRules("kraft", 21), ClusterRules("kraft", 21), ClusterRules("kraft", 23)
    )
    assert run_bridge(settings, reader=reader, sleep=lambda s: None) == 2
    assert len(polls) == 2
    messages = [r.getMessage() for r in caplog.records]
    assert (
        "runs KRaft at metadata.version 3.9-IV0 (level 21), "
        "eligible.leader.replicas.version 0, as the shadow "
        "does (job.toml)" in messages[0]
    )
    assert "now runs KRaft at metadata.version 4.0-IV1 (level 23)" in messages[-1]
    assert 'but the shadow runs metadata.version = "3.9-IV0"' in messages[-1]
