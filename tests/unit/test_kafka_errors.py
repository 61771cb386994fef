"""`state_machines.kafka_errors.Errors` against Kafka's `Errors.java` (name and code)."""

import json

from state_machines.kafka_errors import CODES, Errors


def test_each_error_is_its_name_and_has_kafkas_code() -> None:
    assert set(CODES) == set(Errors)
    for e in Errors:
        assert e.value == e.name
    # Errors.java: NONE(0), UNKNOWN_TOPIC_OR_PARTITION(3), STALE_BROKER_EPOCH(77)
    assert Errors.NONE.code == 0
    assert Errors.UNKNOWN_TOPIC_OR_PARTITION.code == 3
    assert Errors.STALE_BROKER_EPOCH.code == 77
    assert Errors.UNKNOWN_SERVER_ERROR.code == -1


def test_an_error_is_written_as_the_plain_name() -> None:
    # decisions and checkpoints persist the name: JSON, f-strings and str() see the string
    e = Errors.INELIGIBLE_REPLICA
    assert json.dumps({"error": e}) == '{"error": "INELIGIBLE_REPLICA"}'
    assert f"{e}" == str(e) == "INELIGIBLE_REPLICA"
    assert e == "INELIGIBLE_REPLICA" and hash(e) == hash("INELIGIBLE_REPLICA")
