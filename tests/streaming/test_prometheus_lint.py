"""The endpoint's text passes `promtool check metrics` (Prometheus's own linter: parse
errors, missing HELP, counters without `_total`, camelCase names, abbreviated units...)
with no complaint. The text is served by the job's endpoint from real values: the gauges
computed from the controller's state on the scenario of test_controller_metrics.py, its
unclean election, and shadow observations of every outcome."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from state_machines.engine import Engine
from state_machines.events import parse_line
from state_machines.model import ControllerConfig
from streaming.controller_metrics import ALL, controller_metrics
from streaming.prometheus import metric_name, serve
from streaming.settings.schema import JobSettings
from streaming.sink import BatchSink
from tests.streaming.test_controller_metrics import (
    EXPECTED,
    LINES,
    PROMTOOL,
    UNCLEAN_ELECTIONS,
    fetch,
    promtool_check,
)


def served_text(sink: BatchSink) -> bytes:
    server, _ = serve(sink, 0, addr="127.0.0.1")
    try:
        return fetch(server.server_port)
    finally:
        server.shutdown()


@pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool is not installed (Debian's prometheus package: "
    "apt-get install prometheus; bin/setup does it as root)",
)
def test_the_endpoint_passes_promtool_check_metrics(tmp_path: Path) -> None:
    engine = Engine()
    for i, line in enumerate(LINES):
        engine.process(parse_line(line, i))
    sink = BatchSink(JobSettings(input="", output="", checkpoint=str(tmp_path)))
    sink.metrics = controller_metrics(engine.directory, None, engine.config)
    assert sink.metrics == EXPECTED
    sink.unclean_elections = UNCLEAN_ELECTIONS
    sink.observations = {"match": 5, "benign": 2, "safety": 1}
    sink.stats[7] = {}
    text = served_text(sink)

    assert promtool_check(text) == (0, "")
    # what promtool passed is every metric the job serves, with its value
    samples = {
        s.name: s.value
        for f in text_string_to_metric_families(text.decode())
        for s in f.samples
        if not s.labels
    }
    assert {metric_name(k): samples[metric_name(k)] for k in EXPECTED} == {
        metric_name(k): v for k, v in EXPECTED.items()
    }
    # zk mode serves no gauge of KRaft's alone (MigratingZkBrokerCount)
    assert not {metric_name(k) for k in ALL if k not in EXPECTED} & set(samples)
    assert (
        samples["kafka_controller_controllerstats_uncleanleaderelections_total"]
        == UNCLEAN_ELECTIONS
    )
    assert samples["shadow_controller_batch"] == 7


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")
def test_promtool_does_complain_about_a_camel_case_name() -> None:
    """The check above would see a name promtool lints: the names served before this test
    existed kept the MBeans' case, and promtool exits 3 on them."""
    text = (
        b"# HELP kafka_controller_KafkaController_ActiveControllerCount x\n"
        b"# TYPE kafka_controller_KafkaController_ActiveControllerCount gauge\n"
        b"kafka_controller_KafkaController_ActiveControllerCount 1\n"
    )
    code, said = promtool_check(text)
    assert code != 0 and "camelCase" in said


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")
def test_the_kraft_gauges_pass_promtool_check_metrics(tmp_path: Path) -> None:
    """kraft mode serves KRaft's gauges (FencedBrokerCount, ...) and not the ZK controller's
    deletion and state gauges; the text passes promtool as well."""
    config = ControllerConfig(mode="kraft")
    engine = Engine(config)
    for i, line in enumerate(LINES):
        engine.process(parse_line(line, i))
    sink = BatchSink(JobSettings(input="", output="", checkpoint=str(tmp_path), controller=config))
    sink.metrics = controller_metrics(engine.directory, None, config)
    text = served_text(sink)
    assert promtool_check(text) == (0, "")
    samples = {s.name for f in text_string_to_metric_families(text.decode()) for s in f.samples}
    assert (
        metric_name("FencedBrokerCount") in samples and metric_name("ActiveBrokerCount") in samples
    )
    assert metric_name("ControllerState") not in samples
