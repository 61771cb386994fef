"""The decoder's refusals of records Kafka could not have sent (found by reading the decoder
and fuzzing it), and its quick paths held to the checks they stand in front of.

A partition map's keys are strings; before these checks "²" (a digit to `str.isdigit`, not
to `int`) raised a ValueError out of `parse_line`, "٣" was read as partition 3, "1" and "01"
created partition 1 twice, and a key past Kafka's int32 partition ids made a partition."""

from __future__ import annotations

import enum
import itertools
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest

from shadow_controller.simulate import read_events
from state_machines.errors import InvalidEvent
from state_machines.events import InputLimits, _broker_id, _broker_list, _shown, parse_line
from state_machines.model import config_boolean, config_int
from state_machines.record_bounds import _STRING, _check_shape


def creation(partitions: dict[str, list[int]]) -> bytes:
    return json.dumps(
        {"v": 1, "type": "TopicCreation", "topic": "t", "partitions": partitions}
    ).encode()


@pytest.mark.parametrize(
    "partitions, reason",
    [
        ({"²": [1]}, "must be a non-negative integer string, got '²'"),
        ({"٣": [1]}, "must be a non-negative integer string, got '٣'"),
        ({"-1": [1]}, "must be a non-negative integer string"),
        ({" 1": [1]}, "must be a non-negative integer string"),
        ({"2147483648": [1]}, "partition number '2147483648' is outside int32"),
        ({"9" * 5000: [1]}, "is outside int32"),
        ({"1": [1], "01": [2]}, "names partition 1 more than once: ['1', '01']"),
        (
            {"0": [1], "7": [2], "000": [3], "00": [1]},
            "names partition 0 more than once: ['0', '000', '00']",
        ),
        ({"5": [1], "0" * 5000 + "5": [2]}, "names partition 5 more than once"),
    ],
)
def test_a_partition_map_kafka_could_not_hold_is_refused(partitions: dict, reason: str) -> None:
    with pytest.raises(InvalidEvent) as refused:
        parse_line(creation(partitions), 0)
    assert reason in str(refused.value)


@pytest.mark.parametrize(
    "partitions, parsed",
    [
        ({"2147483647": [1]}, ((2147483647, (1,)),)),
        ({"007": [3, 1]}, ((7, (3, 1)),)),
        ({"10": [2], "2": [1]}, ((2, (1,)), (10, (2,)))),
        ({"0" * 5000 + "1": [2]}, ((1, (2,)),)),  # int() alone refuses 4,300 digits and more
    ],
)
def test_a_partition_map_within_the_bounds_is_read(partitions: dict, parsed: tuple) -> None:
    assert parse_line(creation(partitions), 0).event.partitions == parsed


class Broker(enum.IntEnum):
    ONE = 1


def _id_by_id(value: object, name: str, allow_empty: bool) -> tuple[int, ...]:
    """The check the quick path stands in front of, as it was written before it."""
    if not isinstance(value, list):
        raise InvalidEvent(f"field '{name}' must be a list of broker ids")
    ids = tuple(_broker_id(v, name) for v in value)
    if not ids and not allow_empty:
        raise InvalidEvent(f"field '{name}' must not be empty")
    if len(set(ids)) != len(ids):
        raise InvalidEvent(f"field '{name}' has duplicate broker ids: {_shown(list(ids))}")
    return ids


def _outcome(check, value: object, allow_empty: bool) -> tuple[str, object]:
    try:
        return "ids", check(value, "replicas", allow_empty)
    except InvalidEvent as exc:
        return "refused", str(exc)


def test_the_quick_path_answers_as_the_id_by_id_check() -> None:
    atoms: list[object] = [0, 1, 2, 7, -1, True, False, 1.0, "1", None, [1], Broker.ONE, 2**40]
    values: list[object] = [None, "1,2", {"1": 1}, []]
    for size in range(1, 4):
        values += [list(p) for p in itertools.product(atoms, repeat=size)]
    rng = random.Random(7)
    values += [[rng.choice(atoms) for _ in range(rng.randint(4, 9))] for _ in range(2000)]
    values += [list(range(n)) for n in (1, 3, 100)]
    for value in values:
        for allow_empty in (False, True):
            got = _outcome(lambda v, n, a: _broker_list(v, n, allow_empty=a), value, allow_empty)
            assert got == _outcome(_id_by_id, value, allow_empty), value


def test_simulate_skips_a_line_its_decoder_fails_on_as_the_job_dead_letters_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shadow_controller.simulate as simulate

    def parse(line: bytes, offset: int, limits: object) -> object:
        if b"boom" in line:
            raise ValueError("a bug, not bad input")
        return parse_line(line, offset)

    monkeypatch.setattr(simulate, "parse_line", parse)
    path = tmp_path / "events.jsonl"
    path.write_bytes(
        b'{"v":1,"type":"BrokerStartup","broker_id":1}\n"boom"\n{"v":1,"type":"BrokerStartup","broker_id":2}\n'
    )

    class Errors:
        text = ""

        def write(self, s: str) -> None:
            self.text += s

    errors, counts = Errors(), Counter()
    read = [e.offset for e in read_events(str(path), errors, counts=counts)]  # type: ignore[arg-type]
    assert read == [0, 2]
    assert counts["skipped"] == 1
    assert f"{path}:2: skipped (offset 1): not decodable: ValueError" in errors.text


def _deepest_by_hand(text: str) -> int:
    """The depth scan as `_check_shape` wrote it before it summed in C: strings out, then
    +1 for each opening bracket and -1 for each closing one."""
    depth = deepest = 0
    for c in re.sub(r'"(?:[^"\\]|\\.)*"', '""', text):
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def test_the_depth_bound_refuses_what_the_scan_by_hand_finds_too_deep() -> None:
    rng = random.Random(11)
    tokens = ["[", "]", "{", "}", '"[["', '"]"', '"\\"["', "1", ","]
    for _ in range(3000):
        text = "".join(rng.choice(tokens) for _ in range(rng.randint(0, 60)))
        deepest = _deepest_by_hand(text)
        for bound in (0, 1, 3, 8):
            try:
                _check_shape(text, InputLimits(max_depth=bound))
                refused = False
            except InvalidEvent as exc:
                assert str(exc) == f"nested deeper than {bound} levels"
                refused = True
            assert refused == (deepest > bound), (text, bound)


@pytest.mark.parametrize(
    "line, reason",
    [
        # a JSON object's key given twice: the decoder kept the last value
        (
            b'{"v":1,"type":"TopicCreation","topic":"t","partitions":{"0":[1],"0":[2]}}',
            "key '0' appears twice",
        ),
        (
            b'{"v":1,"type":"BrokerStartup","broker_id":-1,"broker_id":1}',
            "key 'broker_id' appears twice",
        ),
        # Kafka's Topic.validate: "." and "..", and `$` matched before a final newline
        (b'{"v":1,"type":"TopicDeletion","topic":"."}', "not a valid Kafka topic name: '.'"),
        (b'{"v":1,"type":"TopicDeletion","topic":".."}', "not a valid Kafka topic name: '..'"),
        (
            b'{"v":1,"type":"TopicDeletion","topic":"orders\\n"}',
            "not a valid Kafka topic name: 'orders\\n'",
        ),
        (
            b'{"v":1,"type":"TopicDeletion","topic":"' + b"a" * 249 + b'\\n"}',
            "not a valid Kafka topic name",
        ),
        # an optional field of the wrong type is refused, not read as its default
        (
            b'{"v":1,"type":"TopicCreation","topic":"t","partitions":{"0":[1]},"configs":[]}',
            "'configs' must be an object",
        ),
        (
            b'{"v":1,"type":"TopicCreation","topic":"t","partitions":{"0":[1]},"configs":false}',
            "'configs' must be an object",
        ),
        (
            b'{"v":1,"type":"ReplicaLeaderElection","election_type":"PREFERRED","partitions":null,"trigger":""}',
            "'trigger' must be admin or zk, got ''",
        ),
        (
            b'{"v":1,"type":"ReplicaLeaderElection","election_type":"PREFERRED","partitions":null,"trigger":0}',
            "'trigger' must be admin or zk, got 0",
        ),
        (
            b'{"v":1,"type":"PartitionStateSnapshot","topic":"t","partition":0,"replicas":[1],"leader":1,"leader_epoch":0,'
            b'"isr":[1],"partition_epoch":0,"controller_epoch":1,"adding_replicas":{}}',
            "'adding_replicas' must be a list",
        ),
        (
            b'{"v":1,"type":"PartitionStateSnapshot","topic":"t","partition":0,"replicas":[1],"leader":1,"leader_epoch":0,'
            b'"isr":[1],"partition_epoch":0,"controller_epoch":1,"removing_replicas":false}',
            "'removing_replicas' must be a list",
        ),
        # a partition map's field name is the partition's number, not its key
        (
            b'{"v":1,"type":"TopicCreation","topic":"t","partitions":{"'
            + b"0" * 200_000
            + b'":[]}}',
            "field 'partitions.0' must not be empty",
        ),
    ],
)
def test_a_record_kafka_could_not_have_sent_is_refused(line: bytes, reason: str) -> None:
    with pytest.raises(InvalidEvent) as refused:
        parse_line(line, 0)
    assert reason in str(refused.value)
    assert len(str(refused.value)) < 400


@pytest.mark.parametrize(
    "line",
    [
        b'{"v":1,"type":"TopicDeletion","topic":"..."}',  # only "." and ".." are Kafka's refusals
        b'{"v":1,"type":"TopicCreation","topic":"t","partitions":{"0":[1]},"configs":null}',
        b'{"v":1,"type":"ReplicaLeaderElection","election_type":"PREFERRED","partitions":null,"trigger":null}',
        b'{"v":1,"type":"TopicCreation","topic":"t","partitions":{"0":[1]},"configs":{"a":"1","b":"2"}}',
    ],
)
def test_null_is_still_the_default_and_distinct_keys_still_read(line: bytes) -> None:
    parse_line(line, 0)


def test_an_unclosed_string_is_one_string_to_the_depth_scan() -> None:
    # the pattern takes it whole, to the end, where it used to be tried again from every
    # quote inside it (quadratic: a 1 MiB record of them took about half an hour)
    text = '{"v":1,' + "[" * 33 + '"x":"' + '\\"[' * 50
    assert _STRING.findall(text) == ['"v"', '"x"', '"' + '\\"[' * 50]
    with pytest.raises(InvalidEvent, match="nested deeper than 32 levels"):
        _check_shape(text, InputLimits())
    # its brackets do not count: only the 34 before it
    _check_shape(text, InputLimits(max_depth=34))


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("true", True),
        ("FALSE", False),
        (" True\t", True),
        ("\x00true\x1f", True),  # String.trim: up to U+0020
        ("fal\u017fe", False),  # Character.toUpperCase('ſ') is 'S'
        ("true\u2003", None),
        ("yes", None),
        ("1", None),
        ("", None),
        ("fal\u00dfe", None),
    ],
)
def test_a_boolean_config_reads_as_kafkas_configdef_reads_it(
    value: str, parsed: bool | None
) -> None:
    assert config_boolean(value) is parsed


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("2", 2),
        (" +3\n", 3),
        ("-1", -1),
        ("0000000000000005", 5),
        ("\u0663", 3),  # Character.digit takes any Nd
        ("2147483647", 2147483647),
        ("2147483648", None),
        ("1_0", None),
        ("5 5", None),
        ("\u20035", None),
        ("", None),
        ("9" * 5000, None),
    ],
)
def test_an_int_config_reads_as_integer_parse_int_reads_it(value: str, parsed: int | None) -> None:
    assert config_int(value) == parsed


@pytest.mark.parametrize(
    "line",
    [
        b'{"v":1,"type":"TopicConfigChange","topic":"t","configs":{"unclean.leader.election.enable":"yes"}}',
        b'{"v":1,"type":"TopicCreation","topic":"t","partitions":{"0":[1]},"configs":{"unclean.leader.election.enable":"1"}}',
        b'{"v":1,"type":"BrokerConfigChange","configs":{"unclean.leader.election.enable":"true\\u2003"}}',
    ],
)
def test_a_boolean_config_kafka_would_refuse_is_refused(line: bytes) -> None:
    with pytest.raises(
        InvalidEvent, match="config 'unclean.leader.election.enable' must be true or false"
    ):
        parse_line(line, 0)


INT32, INT64 = 2**31, 2**63


@pytest.mark.parametrize(
    "event, reason",
    [
        ({"type": "BrokerFailure", "broker_id": INT32}, "'broker_id' is outside int32"),
        (
            {"type": "ControllerFailover", "controller_id": 1, "controller_epoch": INT32},
            "'controller_epoch' is outside int32",
        ),
        (
            {
                "type": "StopReplicaResponse",
                "topic": "t",
                "partition": INT32,
                "broker_id": 1,
                "error": None,
            },
            "'partition' is outside int32",
        ),
        (
            {"type": "TopicCreation", "topic": "t", "partitions": {"0": [1, INT32]}},
            "'partitions.0' is outside int32",
        ),
        (
            {
                "type": "PartitionReassignment",
                "topic": "t",
                "partition": 0,
                "target_replicas": [1, INT32],
            },
            "'target_replicas' is outside int32",
        ),
        (
            {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": INT64},
            "'broker_epoch' is outside int64",
        ),
        ({"type": "ControllerTick", "ts": INT64}, "'ts' is outside int64"),
        ({"type": "ControllerTick", "ts": -INT64 - 1}, "'ts' is outside int64"),
    ],
)
def test_a_number_outside_its_kafka_type_is_refused(event: dict, reason: str) -> None:
    with pytest.raises(InvalidEvent) as refused:
        parse_line(json.dumps({"v": 1, **event}).encode(), 0)
    assert reason in str(refused.value)


@pytest.mark.parametrize(
    "event",
    [
        {"type": "BrokerFailure", "broker_id": INT32 - 1},
        {"type": "TopicCreation", "topic": "t", "partitions": {"0": [INT32 - 1]}},
        {"type": "BrokerStartup", "broker_id": 1, "broker_epoch": INT64 - 1},
        {"type": "ControllerTick", "ts": INT64 - 1},
        {
            "type": "PartitionReassignment",
            "topic": "t",
            "partition": 0,
            "target_replicas": [-1, 1],
        },  # Kafka's own check
    ],
)
def test_a_number_at_the_edge_of_its_kafka_type_is_read(event: dict) -> None:
    parse_line(json.dumps({"v": 1, **event}).encode(), 0)
