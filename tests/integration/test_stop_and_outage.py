"""A stop within a bound, and broker outages, with the job as a real `shadow-controller run`
process on a broker of its own (an embedded Tansu that the tests freeze with SIGSTOP).

- a broker frozen during the decisions write, then SIGTERM: the job exits within
  `job.stop_timeout_seconds`, and a restart (broker thawed) loses nothing;
- a backlog behind topic deletions (every batch's reports plan the next batch), SIGTERM:
  exits within the bound;
- SIGTERM to the job's process group: the same clean stop as a SIGTERM to the driver,
  and Spark's JVM (in a session of its own) still ends with the driver;
- an outage with `on_broker_outage = "wait"`: the job waits, says so, and resumes by
  itself; with `"exit"`: exit code 5 and one line;
- the connector's read waits out an outage longer than its `pollTimeoutMs`, and the
  checked producer gives up a wait when told to.

Each stop's duration is printed (`-s` shows them) and bounded by the assertions. The
tests that run the job as a process are marked `slow`: bin/test runs them one at a time,
beside the other tests. Their bounds (an exit within `STOP_TIMEOUT_S` + `EXIT_SLACK_S`, an
outage noticed within a minute) bound what the job enforces itself (its stop timeout),
with room for the driver's own exit: with the machine to themselves the exits took 2.2-4.3
s of the 13 s allowed, and they pass in the slow lane beside the main run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shadow_controller.broker import EmbeddedBroker, create_topics, embedded_broker
from tests.integration.kafka_helpers import consume_all
from tests.property.generator import generate_log
from tests.streaming.spark_helpers import canonical, simulate_records

ROOT = Path(__file__).resolve().parents[2]
STOP_TIMEOUT_S = 10
# the driver's own exit (Python teardown) after the bound the job enforces
EXIT_SLACK_S = 3


# -- helpers -------------------------------------------------------------------------------


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A broker of this test's own: the tests freeze it."""
    with embedded_broker(log_dir=tmp_path) as b:
        try:
            yield b
        finally:
            os.kill(b.pid, signal.SIGCONT)


def wait_for(
    condition: Callable[[], object], deadline_s: float, what: str, job: Job | None = None
) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if condition():
            return
        if job is not None and job.proc.poll() is not None:
            raise AssertionError(f"job exited ({job.proc.returncode}) before {what}:\n{job.tail()}")
        time.sleep(0.2)  # polling interval of a condition with a deadline
    raise AssertionError(f"timed out waiting for {what}" + (f":\n{job.tail()}" if job else ""))


class Job:
    """`shadow-controller run` in Kafka mode, its output in a file."""

    def __init__(
        self,
        base: Path,
        bootstrap: str,
        topics: tuple[str, str],
        *settings: str,
        available_now: bool = False,
    ) -> None:
        events, decisions = topics
        self.log_path = base / f"job-{len(list(base.glob('job-*.log')))}.log"
        cmd = [
            sys.executable,
            "-m",
            "shadow_controller.cli",
            "run",
            "--input",
            "kafka",
            "--output",
            "kafka",
            "--checkpoint",
            str(base / "ckpt"),
            "--bootstrap-servers",
            bootstrap,
            "--set",
            f'kafka.events_topic="{events}"',
            "--set",
            f'kafka.decisions_topic="{decisions}"',
            "--set",
            f"job.stop_timeout_seconds={STOP_TIMEOUT_S}",
            *settings,
        ]
        if available_now:
            cmd.append("--available-now")
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, start_new_session=True, stdout=out, stderr=subprocess.STDOUT
            )

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def tail(self) -> str:
        return self.text()[-4000:]

    def logged(self, needle: str) -> bool:
        return needle in self.text()

    def wait_exit(self, deadline_s: float) -> float:
        """Seconds until the process exited (fails past the deadline)."""
        began = time.monotonic()
        try:
            self.proc.wait(deadline_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the job did not exit within {deadline_s:.0f}s:\n{self.tail()}"
            ) from None
        return time.monotonic() - began

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def jobs() -> Iterator[list[Job]]:
    started: list[Job] = []
    yield started
    for job in started:
        job.kill()


def topics(bootstrap: str) -> tuple[str, str]:
    create_topics(bootstrap, {"events": 1, "decisions": 1, "events.dlq": 1})
    return "events", "decisions"


def produce(bootstrap: str, topic: str, lines: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "enable.idempotence": True}
    )
    for line in lines:
        producer.produce(topic, value=line)
    assert producer.flush(60) == 0


def high_watermark(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"hw-{time.monotonic_ns()}"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def assert_nothing_lost(bootstrap: str, topic: str, expected: list[str]) -> None:
    """Every decision `simulate` makes is on the topic, as often as it makes it; anything
    more is an exact copy of one of them (a batch abandoned mid-write is written again)."""
    got = Counter(
        canonical(json.loads(m.value())) for m in consume_all(bootstrap, topic, len(expected), 180)
    )
    want = Counter(expected)
    missing = want - got
    assert not missing, f"{sum(missing.values())} decisions missing, e.g. {next(iter(missing))}"
    assert set(got) == set(want), "only copies of expected decisions may repeat"


def cluster_start() -> list[dict]:
    return [{"v": 1, "type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1}] + [
        {"v": 1, "type": "BrokerStartup", "broker_id": b, "broker_epoch": b} for b in (1, 2, 3)
    ]


def encode(events: list[dict]) -> list[bytes]:
    return [json.dumps(e).encode() for e in events]


def report(what: str, seconds: float) -> None:
    print(f"\n{what}: {seconds:.1f} s")


# -- a stop within a bound -----------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.slow
def test_frozen_broker_during_the_decisions_write_then_sigterm(broker, tmp_path, jobs) -> None:
    bootstrap = broker.bootstrap_servers
    names = topics(bootstrap)
    big = {
        "v": 1,
        "type": "TopicCreation",
        "topic": "big",
        "partitions": {
            str(p): [1 + p % 3, 1 + (p + 1) % 3, 1 + (p + 2) % 3] for p in range(20_000)
        },
    }
    lines = encode(cluster_start() + [big])
    # small produce requests, one in flight: the write of the big batch takes seconds
    settings = ("--set", "job.partition_buckets=4", "--set", "kafka.options.batch.num.messages=200")
    produce(bootstrap, names[0], lines[:-1])
    job = Job(tmp_path, bootstrap, names, *settings)
    jobs.append(job)
    wait_for(lambda: job.logged("batch 0:"), 240, "the first batch", job)
    before = high_watermark(bootstrap, names[1])
    produce(bootstrap, names[0], lines[-1:])
    wait_for(
        lambda: high_watermark(bootstrap, names[1]) > before,
        240,
        "the big batch's first decisions",
        job,
    )
    os.kill(broker.pid, signal.SIGSTOP)
    job.proc.send_signal(signal.SIGTERM)
    took = job.wait_exit(STOP_TIMEOUT_S + EXIT_SLACK_S)
    report("SIGTERM with the broker frozen mid-write: exited after", took)
    assert job.proc.returncode == 0, job.tail()
    assert "batch 1 did not commit" in job.text(), "the stop must land in the write"
    assert "Traceback" not in job.text(), job.tail()

    os.kill(broker.pid, signal.SIGCONT)
    rest = Job(tmp_path, bootstrap, names, *settings, available_now=True)
    jobs.append(rest)
    rest.wait_exit(600)
    assert rest.proc.returncode == 0, rest.tail()
    assert_nothing_lost(bootstrap, names[1], simulate_records(lines))


def deletion_backlog(topics_deleted: int) -> list[bytes]:
    """Creations and deletions of small topics: each deletion holds the later events until
    its partitions' reports come back, so the job runs a batch per deletion after it has
    read everything."""
    events = cluster_start()
    for i in range(topics_deleted):
        events.append(
            {
                "v": 1,
                "type": "TopicCreation",
                "topic": f"d{i}",
                "partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
            }
        )
        events.append({"v": 1, "type": "TopicDeletion", "topic": f"d{i}"})
    return encode(events)


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.slow
def test_sigterm_with_a_backlog_behind_topic_deletions(broker, tmp_path, jobs) -> None:
    bootstrap = broker.bootstrap_servers
    names = topics(bootstrap)
    # 15 deletions: about 30 micro-batches of feedback rounds (the restart drains the last
    # 26 after a stop at the fifth), which a stop that waited for them would show far past
    # the bound below; 30 deletions doubled the rounds the restart drains (1-4 s each) and
    # showed nothing more
    lines = deletion_backlog(15)
    produce(bootstrap, names[0], lines)
    settings = ("--set", 'job.trigger_interval="0 seconds"')
    job = Job(tmp_path, bootstrap, names, *settings)
    jobs.append(job)
    wait_for(lambda: job.logged("batch 3:"), 240, "three feedback rounds", job)
    job.proc.send_signal(signal.SIGTERM)
    took = job.wait_exit(STOP_TIMEOUT_S + EXIT_SLACK_S)
    report("SIGTERM with deletion rounds pending: exited after", took)
    assert job.proc.returncode == 0, job.tail()
    batches = job.text().count(": events in ")
    assert batches < 10, f"the stop waited for {batches} batches; the backlog needs ~30"

    rest = Job(tmp_path, bootstrap, names, *settings, available_now=True)
    jobs.append(rest)
    rest.wait_exit(600)
    assert rest.proc.returncode == 0, rest.tail()
    assert_nothing_lost(bootstrap, names[1], simulate_records(lines))


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.slow
def test_sigterm_to_the_process_group_stops_like_one_to_the_driver(broker, tmp_path, jobs) -> None:
    bootstrap = broker.bootstrap_servers
    names = topics(bootstrap)
    # 38 events (68 before: nothing more was covered), 5 a micro-batch: the stop lands at
    # the third or fourth batch, well before the end; the restart may read up to 30 a batch
    # (Spark replays an uncommitted batch with the offsets it logged whatever this says),
    # as the sequencer admits them, each micro-batch costing 1-4 s of fixed work
    lines = encode(generate_log(5, n_events=30))
    produce(bootstrap, names[0], lines)
    settings = ("--set", 'job.trigger_interval="0 seconds"')
    job = Job(tmp_path, bootstrap, names, *settings, "--set", "job.max_offsets_per_trigger=5")
    jobs.append(job)
    wait_for(lambda: job.logged("batch 2:"), 240, "three batches", job)
    jvms = [
        pid
        for pid in children(job.proc.pid)
        if b"java" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(jvms) == 1
    assert os.getsid(jvms[0]) == jvms[0] != os.getsid(job.proc.pid), (
        "the JVM runs in a session of its own"
    )

    os.killpg(
        job.proc.pid, signal.SIGTERM
    )  # what systemd's KillMode=control-group or `kill -- -PGID` sends
    took = job.wait_exit(STOP_TIMEOUT_S + EXIT_SLACK_S)
    report("SIGTERM to the process group: exited after", took)
    assert job.proc.returncode == 0, job.tail()
    assert "stopping after the current batch" in job.text()
    assert "committed" in job.text() or "abandon" in job.text()
    wait_for(lambda: not running(jvms[0]), 30, "the JVM to end with the driver")
    assert job.text().count(": events in ") < len(lines) // 5, "the stop lands mid-run"

    rest = Job(
        tmp_path,
        bootstrap,
        names,
        *settings,
        "--set",
        "job.max_offsets_per_trigger=30",
        available_now=True,
    )
    jobs.append(rest)
    rest.wait_exit(600)
    assert rest.proc.returncode == 0, rest.tail()
    assert_nothing_lost(bootstrap, names[1], simulate_records(lines))


# -- broker outages ------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.slow
def test_an_outage_is_waited_out_and_the_job_resumes_by_itself(broker, tmp_path, jobs) -> None:
    """Frozen while the job plans its next batch: the old job failed there within 10 s
    (a Metadata request without an answer), and only a restart brought it back."""
    bootstrap = broker.bootstrap_servers
    names = topics(bootstrap)
    lines = encode(generate_log(17, n_events=50))
    first, second = lines[:25], lines[25:]
    produce(bootstrap, names[0], first)
    job = Job(tmp_path, bootstrap, names, "--set", "job.heartbeat_seconds=3")
    jobs.append(job)
    wait_for(
        lambda: (
            "idle for" in job.text() and f"{names[0]}-0 at offset {len(first)}, lag 0" in job.text()
        ),
        240,
        "an idle heartbeat with the offsets",
        job,
    )

    os.kill(broker.pid, signal.SIGSTOP)
    frozen = time.monotonic()
    wait_for(lambda: job.logged("unreachable for"), 60, "the outage line", job)
    wait_for(lambda: time.monotonic() - frozen >= 20, 30, "a 20 s outage", job)
    os.kill(broker.pid, signal.SIGCONT)
    wait_for(lambda: job.logged("answers again"), 60, "the end of the outage", job)
    outage_lines = [line for line in job.text().splitlines() if "unreachable for" in line]
    assert len(outage_lines) == 1, outage_lines  # one line a minute
    assert "waiting (job.on_broker_outage = wait)" in outage_lines[0]

    produce(bootstrap, names[0], second)
    expected = simulate_records(lines)
    got = consume_all(bootstrap, names[1], len(expected), 240)
    assert Counter(canonical(json.loads(m.value())) for m in got) == Counter(expected)
    assert job.proc.poll() is None
    job.proc.send_signal(signal.SIGTERM)
    took = job.wait_exit(STOP_TIMEOUT_S + EXIT_SLACK_S)
    report("SIGTERM after the outage: exited after", took)
    assert job.proc.returncode == 0, job.tail()
    assert "Traceback" not in job.text(), job.tail()


@pytest.mark.spark
@pytest.mark.broker
@pytest.mark.slow
def test_with_on_broker_outage_exit_the_job_exits_with_code_5_and_one_line(
    broker, tmp_path, jobs
) -> None:
    bootstrap = broker.bootstrap_servers
    names = topics(bootstrap)
    lines = encode(generate_log(5, n_events=20))
    produce(bootstrap, names[0], lines)
    job = Job(
        tmp_path,
        bootstrap,
        names,
        "--set",
        'job.on_broker_outage="exit"',
        "--set",
        "job.outage_exit_after_seconds=5",
    )
    jobs.append(job)
    wait_for(lambda: job.logged("batch 0:"), 240, "the first batch", job)
    before = len(job.text())
    os.kill(broker.pid, signal.SIGSTOP)
    took = job.wait_exit(60)
    report("on_broker_outage = exit, outage_exit_after_seconds = 5: exited after", took)
    assert job.proc.returncode == 5, job.tail()
    after = job.text()[before:]
    exits = [line for line in after.splitlines() if "exiting (job.on_broker_outage = exit" in line]
    assert len(exits) == 1, after
    assert "Traceback" not in after and "Exception" not in after and "\tat " not in after, after


@pytest.mark.broker
def test_a_read_waits_out_an_outage_longer_than_its_poll_timeout(broker, tmp_path) -> None:
    """The connector's read, in process: with the broker frozen for longer than
    `kafkaConsumer.pollTimeoutMs` (where it used to fail), it reports the outage, then
    returns the whole range once the broker is back."""
    from streaming.kafka.offsets import KafkaInputPartition
    from streaming.kafka.options import SourceOptions
    from streaming.kafka.outage import read_outage
    from streaming.kafka.reader import read_range

    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, {"t": 1})
    produce(bootstrap, "t", [b"%d" % i for i in range(50)])
    outage_file = tmp_path / "BROKER_OUTAGE"
    options = SourceOptions.parse(
        {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": "t",
            "kafkaConsumer.pollTimeoutMs": "2000",
            "endOffsetProbeTimeoutMs": "2000",
            "shadow.outageFile": str(outage_file),
        },
        streaming=True,
    )
    got: list[bytes] = []
    failure: list[BaseException] = []

    def read() -> None:
        try:
            for batch in read_range(options, KafkaInputPartition("t", 0, 0, 50)):
                got.extend(batch.column("value").to_pylist())
        except BaseException as exc:
            failure.append(exc)

    os.kill(broker.pid, signal.SIGSTOP)
    frozen = time.monotonic()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    wait_for(lambda: read_outage(str(outage_file)) is not None or failure, 30, "the outage report")
    wait_for(lambda: time.monotonic() - frozen >= 3 * 2 or failure, 10, "three poll timeouts")
    assert not failure, failure
    assert read_outage(str(outage_file))["servers"] == bootstrap
    os.kill(broker.pid, signal.SIGCONT)
    reader.join(60)
    assert not reader.is_alive() and not failure, failure
    assert got == [b"%d" % i for i in range(50)]
    assert not outage_file.exists(), "the report goes once the broker answers"


def test_a_broker_frozen_before_the_end_offset_probe_is_an_outage_not_data_loss(broker) -> None:
    """The end offset is ListOffsets(latest), raised by a Fetch probe, since Tansu answers
    ListOffsets with its last batch's base offset + 1 (`streaming/kafka/offsets.py`). A broker
    that answered ListOffsets and froze before the probe used to leave the ListOffsets answer
    alone: 1 for 25 records in one batch, below the 25 the job had read, which the source
    reported as data loss and the job died of (a CI run of this module's outage test)."""
    from streaming.kafka.errors import BrokerUnavailable
    from streaming.kafka.offsets import OffsetReader
    from streaming.kafka.options import SourceOptions

    bootstrap = broker.bootstrap_servers
    create_topics(bootstrap, {"t": 1})
    produce(bootstrap, "t", [b"%d" % i for i in range(25)])  # one batch (linger.ms 50)
    options = SourceOptions.parse(
        {"kafka.bootstrap.servers": bootstrap, "subscribe": "t", "endOffsetProbeTimeoutMs": "1000"},
        streaming=True,
    )
    first = OffsetReader(options)
    try:
        tps = first.topic_partitions()
        assert first._list_offsets(tps, -1) == {("t", 0): 1}, "Tansu's answer, for the record"
        assert first.latest(tps) == {("t", 0): 25}
    finally:
        first.close()
    # a reader of its own for the frozen probe: nothing the first one fetched is left in it
    reader = OffsetReader(options)
    try:
        listed = reader._list_offsets

        def listed_then_frozen(*args: object) -> object:
            answer = listed(*args)  # type: ignore[arg-type]
            os.kill(broker.pid, signal.SIGSTOP)
            return answer

        reader._list_offsets = listed_then_frozen  # type: ignore[method-assign]
        try:
            with pytest.raises(BrokerUnavailable, match="Fetch: no answer within 1 s for the end"):
                reader.latest(tps)
        finally:
            os.kill(broker.pid, signal.SIGCONT)
        reader._list_offsets = listed  # type: ignore[method-assign]
        assert reader.latest(tps) == {("t", 0): 25}, "answered again once the broker thaws"
    finally:
        reader.close()


def test_a_producer_waiting_for_a_broker_gives_up_when_cancelled() -> None:
    """No broker at all: records wait (message.timeout.ms = 0) until `cancel` is set."""
    import socket

    from streaming.kafka.client import quiet
    from streaming.kafka.errors import WriteAbandoned
    from streaming.kafka.producer import CheckedProducer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    cancel = threading.Event()
    stalls: list[float] = []
    producer = CheckedProducer(
        quiet({"bootstrap.servers": f"127.0.0.1:{port}", "message.timeout.ms": 0}),
        cancel=cancel,
        on_stall=stalls.append,
        stall_s=0.5,
    )
    producer.send("t", b"x")
    timer = threading.Timer(2.0, cancel.set)
    timer.start()
    began = time.monotonic()
    with pytest.raises(WriteAbandoned):
        producer.confirm()
    took = time.monotonic() - began
    assert 1.5 <= took <= 3.0, took
    assert stalls, "a stall is reported while nothing is confirmed"
