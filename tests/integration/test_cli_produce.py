"""`shadow-controller produce`: an events file onto a topic, every delivery confirmed."""

from __future__ import annotations

from shadow_controller.cli import main as cli_main
from tests.integration.kafka_helpers import consume_all


def test_produce_writes_each_line_once_in_order(bootstrap, new_topic, tmp_path, capsys):
    topic = new_topic()
    events = tmp_path / "events.jsonl"
    lines = [
        b'{"v":1,"type":"BrokerStartup","broker_id":%d,"broker_epoch":%d}' % (b, 100 + b)
        for b in range(1, 6)
    ]
    events.write_bytes(b"\r\n".join(lines) + b"\n\n")  # CRLF and a blank line are not records
    assert (
        cli_main(["produce", str(events), "--bootstrap-servers", bootstrap, "--topic", topic]) == 0
    )
    assert "produced 5 events" in capsys.readouterr().out
    assert [m.value() for m in consume_all(bootstrap, topic, expected=5)] == lines


def test_produce_to_an_unreachable_cluster_fails_and_says_so(tmp_path, capsys):
    from streaming import exits

    events = tmp_path / "events.jsonl"
    events.write_text('{"v":1,"type":"BrokerFailure","broker_id":1}\n')
    code = cli_main(
        [
            "produce",
            str(events),
            "--bootstrap-servers",
            "127.0.0.1:1",
            "--topic",
            "nowhere",
            "--timeout",
            "2",
        ]
    )
    assert code == exits.UNREACHABLE
    assert capsys.readouterr().err == (
        "shadow-controller produce: cannot reach Kafka at 127.0.0.1:1 within 2s; "
        "check --bootstrap-server and that the broker is up\n"
    )
