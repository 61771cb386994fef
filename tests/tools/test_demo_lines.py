"""The demo shows each input line as it feeds it; a line the contract refuses is fed as it
is (the job's dead letters take it) and shown with the job's reason, not a traceback."""

from __future__ import annotations

from shadow_controller.demo import describe_line


def test_an_event_is_shown_by_its_id_and_fields() -> None:
    line = b'{"v":1,"type":"BrokerFailure","broker_id":2,"id":"kill-2"}'
    assert describe_line(line, 4, "shadow.events.dlq") == "kill-2: BrokerFailure broker_id=2"


def test_a_refused_line_names_the_reason_and_the_dead_letter_topic() -> None:
    shown = {
        line: describe_line(line, 0, "ev.dlq")
        for line in (b"{not json", b'{"v":1,"type":"BrokerFailure"}', b"\xff\xfe")
    }
    assert shown[b"{not json"].startswith("not an event (")
    assert "not JSON" in shown[b"{not json"]
    assert "broker_id" in shown[b'{"v":1,"type":"BrokerFailure"}']
    assert "UTF-8" in shown[b"\xff\xfe"]
    assert all(s.endswith(": the job writes it to ev.dlq") for s in shown.values())
