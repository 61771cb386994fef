"""Random contract-v1 event logs for a small ZooKeeper-era cluster, state-aware.

One generator serves two drivers:

* the Hypothesis state machine (`test_controller_machine.py`) calls one `build_*` method
  per rule with a `DrawChooser` (every choice is a Hypothesis draw, so failures shrink);
* seeded tests (the Spark equivalence tests) call `generate_log(seed)`, which picks the
  event kinds itself from a `random.Random`, and get a plain list of event dicts to write
  as JSONL or feed to any engine.

The builder keeps a shadow `Engine` and reads `Engine.state_json()` before each choice, so
an `AlterPartition` is what the partition's leader would send (its leader and partition
epochs, an ISR shrunk or expanded with live replicas), a `StopReplicaResponse` answers a
replica really in `ReplicaDeletionStarted`, and a bounce carries a higher broker epoch.
A small share of each kind is deliberately stale or refused, as a real cluster produces.

In kraft mode (`ControllerConfig(mode="kraft")`) the builder reads KRaft's state (brokers
fenced or not, partitions as registrations) and makes the same kinds of events. Two of
them have no KRaft meaning and are dead letters there (quorum_controller.py, `_NOT_MAPPED`):
`StopReplicaResponse`, which it then sends for any replica of a partition, and
`ReplicaDirFailure`; `emit` keeps each event's dead letters (`dead_letters`) for the
checker to judge (kraft_invariants.py: exactly one for each of those, and none for any other
event but where Kafka itself throws). `min_isr_configs=True` (for ELR, KIP-966) gives some topics a
`min.insync.replicas` of 2 or 3, kept when the unclean config flips.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from state_machines.engine import Engine
from state_machines.events import parse_event
from state_machines.model import ControllerConfig

T = TypeVar("T")

BROKER_IDS = (1, 2, 3, 4, 5)
TOPIC_NAMES = ("t0", "t1", "t2", "t3")
UNCLEAN = "unclean.leader.election.enable"
MIN_ISR = "min.insync.replicas"


def is_live(fact: dict[str, Any]) -> bool:
    """A broker's liveness in either mode's state JSON: ZK's `live`, KRaft's not fenced."""
    return bool(fact["live"]) if "live" in fact else not fact["fenced"]


def is_offline(p: dict[str, Any]) -> bool:
    """ZK's OfflinePartition; in KRaft a partition without a leader (`partitionsWithNoLeader`)."""
    return p["state"] == "OfflinePartition" if "state" in p else p["leader"] == -1


class Chooser(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...

    def choice(self, options: Sequence[T]) -> T: ...

    def chance(self, p: float) -> bool: ...

    def sample(self, options: Sequence[T], k: int) -> list[T]: ...


class RandomChooser:
    """Choices from a `random.Random` (seeded, reproducible across processes)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def sample(self, options: Sequence[T], k: int) -> list[T]:
        return self.rng.sample(list(options), k)


class DrawChooser:
    """Choices drawn from Hypothesis (`data.draw`); each shrinks towards the first option,
    the lower bound, and `False` for `chance` (so shrunk logs keep the ordinary path)."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(self.st.integers(lo, hi))

    def choice(self, options: Sequence[T]) -> T:
        return options[self.draw(self.st.integers(0, len(options) - 1))]

    def chance(self, p: float) -> bool:
        return self.draw(self.st.integers(0, 999)) >= 1000 - int(p * 1000)

    def sample(self, options: Sequence[T], k: int) -> list[T]:
        pool = list(options)
        out = []
        for _ in range(k):
            out.append(pool.pop(self.draw(self.st.integers(0, len(pool) - 1))))
        return out


Event = dict[str, Any]


class LogBuilder:
    """Builds events against a shadow engine and applies each one as it is emitted.

    `emit(event)` parses the event with `parse_event`, runs it through `self.engine` and
    returns the engine's decision records; `self.events` is the log so far.
    """

    def __init__(
        self, config: ControllerConfig | None = None, min_isr_configs: bool = False
    ) -> None:
        self.engine = Engine(config or ControllerConfig())
        self.kraft = self.engine.config.mode == "kraft"
        self.min_isr_configs = min_isr_configs
        # each event's dead letters (engine errors); in kraft mode the checker judges them
        self.dead_letters: list[list[tuple[int, str]]] = []
        self.events: list[Event] = []
        self.outputs: list[list[dict[str, Any]]] = []
        self.next_broker_epoch = 100
        self.controller_epoch = 0
        # event time (ms): every event is 100 ms after the one before; a tick jumps further
        self.now = 0
        # called as observer(event, state_before, records, state_after) for each event
        self.observers: list[
            Callable[[Event, dict[str, Any], list[dict[str, Any]], dict[str, Any]], None]
        ] = []

    # -- plumbing ------------------------------------------------------------------------

    def emit(self, event: Event) -> list[dict[str, Any]]:
        self.now = max(self.now + 100, event.pop("ts", 0))
        event = {"v": 1, **event, "id": f"e{len(self.events)}", "ts": self.now}
        envelope = parse_event(event, len(self.events))
        before = self.state() if self.observers else {}
        self.events.append(event)
        seen = len(self.engine.errors)
        records = self.engine.process(envelope)
        new = self.engine.errors[seen:]
        self.dead_letters.append(new)
        if not self.kraft:
            # the engine turns a raised exception into an error entry; in a generated log
            # it is a bug
            assert not self.engine.errors, f"[no-controller-error] {self.engine.errors}"
        self.outputs.append(records)
        if self.observers:
            after = self.state()
            for observer in self.observers:
                observer(event, before, records, after)
        return records

    def state(self) -> dict[str, Any]:
        return self.engine.state_json()

    def fresh_epoch(self) -> int:
        self.next_broker_epoch += 1
        return self.next_broker_epoch

    def registered(self) -> list[int]:
        return [int(b) for b in self.state()["brokers"]]

    def live(self) -> list[int]:
        return [int(b) for b, f in self.state()["brokers"].items() if is_live(f)]

    def topics(self) -> list[str]:
        return list(self.state()["topics"])

    def partitions(self) -> list[tuple[str, int]]:
        out = []
        for key in self.state()["partitions"]:
            topic, _, p = key.rpartition("-")
            out.append((topic, int(p)))
        return out

    # -- cluster start -------------------------------------------------------------------

    def start_cluster(self, c: Chooser, initial_topics: int = 0) -> None:
        """BrokerStartup for every broker (loaded while inactive), optionally topics that the
        new controller finds in the store, then ControllerFailover epoch 1."""
        for b in BROKER_IDS:
            self.emit({"type": "BrokerStartup", "broker_id": b, "broker_epoch": self.fresh_epoch()})
        for _ in range(initial_topics):
            event = self.build_topic_creation(c)
            if event is not None:
                self.emit(event)
        self.controller_epoch = 1
        self.emit({"type": "ControllerFailover", "controller_id": 1, "controller_epoch": 1})

    # -- builders (None: nothing sensible to send in this state) -----------------------

    def build_broker_failure(self, c: Chooser) -> Event | None:
        registered = self.registered()
        if not registered:
            return None
        return {"type": "BrokerFailure", "broker_id": c.choice(registered)}

    def build_broker_startup(self, c: Chooser) -> Event | None:
        """A dead broker coming back, or a registered one bouncing (higher epoch), or a
        repeated registration with the same epoch (a no-op)."""
        state = self.state()["brokers"]
        dead = [b for b in BROKER_IDS if str(b) not in state]
        if dead and not c.chance(0.3):
            return {
                "type": "BrokerStartup",
                "broker_id": c.choice(dead),
                "broker_epoch": self.fresh_epoch(),
            }
        b = c.choice(BROKER_IDS)
        if str(b) in state and c.chance(0.2):
            return {
                "type": "BrokerStartup",
                "broker_id": b,
                "broker_epoch": state[str(b)]["broker_epoch"],
            }
        return {"type": "BrokerStartup", "broker_id": b, "broker_epoch": self.fresh_epoch()}

    def build_controlled_shutdown(self, c: Chooser) -> Event | None:
        state = self.state()["brokers"]
        b = c.choice(BROKER_IDS)
        epoch = state[str(b)]["broker_epoch"] if str(b) in state else None
        if c.chance(0.15):
            epoch = -1  # an old client that sends no epoch
        elif epoch is not None and c.chance(0.1):
            epoch -= 1  # stale: refused with STALE_BROKER_EPOCH
        event: Event = {"type": "ControlledShutdown", "broker_id": b}
        if epoch is not None:
            event["broker_epoch"] = epoch
        return event

    def build_topic_creation(self, c: Chooser) -> Event | None:
        existing = set(self.topics())
        free = [t for t in TOPIC_NAMES if t not in existing]
        if not free:
            return None
        topic = c.choice(free)
        n = c.integer(1, 3)
        rf = c.integer(1, 3)
        partitions = {str(p): c.sample(BROKER_IDS, rf) for p in range(n)}
        event: Event = {"type": "TopicCreation", "topic": topic, "partitions": partitions}
        if c.chance(0.3):
            event["configs"] = {UNCLEAN: c.choice(("true", "false"))}
        if self.min_isr_configs and c.chance(0.6):
            event["configs"] = {**event.get("configs", {}), MIN_ISR: c.choice(("2", "3"))}
        return event

    def build_partition_expansion(self, c: Chooser) -> Event | None:
        topics = self.topics()
        if not topics:
            return None
        topic = c.choice(topics)
        known = [p for t, p in self.partitions() if t == topic]
        first = max(known, default=-1) + 1
        rf = c.integer(1, 3)
        return {
            "type": "PartitionExpansion",
            "topic": topic,
            "partitions": {str(first): c.sample(BROKER_IDS, rf)},
        }

    def build_topic_deletion(self, c: Chooser) -> Event | None:
        topics = self.topics()
        if not topics or c.chance(0.05):
            return {"type": "TopicDeletion", "topic": c.choice(TOPIC_NAMES)}
        return {"type": "TopicDeletion", "topic": c.choice(topics)}

    def build_stop_replica_response(self, c: Chooser) -> Event | None:
        if self.kraft:
            # no deletion round in KRaft: a response for any replica (a dead letter)
            replicas = [
                (key, b) for key, p in self.state()["partitions"].items() for b in p["replicas"]
            ]
            if not replicas:
                return None
            key, broker = c.choice(replicas)
            topic, _, p = key.rpartition("-")
            return {
                "type": "StopReplicaResponse",
                "topic": topic,
                "partition": int(p),
                "broker_id": broker,
                "error": None,
            }
        started = [
            (key, int(b))
            for key, p in self.state()["partitions"].items()
            for b, s in p["replica_states"].items()
            if s == "ReplicaDeletionStarted"
        ]
        if not started:
            return None
        key, broker = c.choice(started)
        topic, _, p = key.rpartition("-")
        error = (
            c.choice(("KAFKA_STORAGE_ERROR", "UNKNOWN_SERVER_ERROR")) if c.chance(0.25) else None
        )
        return {
            "type": "StopReplicaResponse",
            "topic": topic,
            "partition": int(p),
            "broker_id": broker,
            "error": error,
        }

    def build_reassignment(self, c: Chooser) -> Event | None:
        parts = self.partitions()
        if not parts:
            return None
        state = self.state()["partitions"]
        offline = [tp for tp in parts if is_offline(state[f"{tp[0]}-{tp[1]}"])]
        live = self.live()
        if offline and live and c.chance(0.3):
            # an offline partition moved to live brokers: elected at the next broker change
            # (or unclean enabling) anywhere, if the rules allow it
            topic, p = c.choice(offline)
            return {
                "type": "PartitionReassignment",
                "topic": topic,
                "partition": p,
                "target_replicas": c.sample(live, c.integer(1, min(3, len(live)))),
            }
        topic, p = c.choice(parts)
        current = state[f"{topic}-{p}"]
        reassigning = bool(current["adding_replicas"] or current["removing_replicas"])
        if c.chance(0.5 if reassigning else 0.05):
            target = None  # cancel (NO_REASSIGNMENT_IN_PROGRESS when none is running)
        else:
            target = c.sample(BROKER_IDS, c.integer(1, 3))
        return {
            "type": "PartitionReassignment",
            "topic": topic,
            "partition": p,
            "target_replicas": target,
        }

    def build_election(self, c: Chooser) -> Event | None:
        kind = c.choice(("PREFERRED", "UNCLEAN"))
        parts = self.partitions()
        if not parts or c.chance(0.2):
            partitions = None
        else:
            chosen = c.sample(parts, c.integer(1, min(2, len(parts))))
            partitions = [{"topic": t, "partition": p} for t, p in sorted(chosen)]
        trigger = "zk" if c.chance(0.3) else "admin"
        return {
            "type": "ReplicaLeaderElection",
            "election_type": kind,
            "partitions": partitions,
            "trigger": trigger,
        }

    def build_config_change(self, c: Chooser) -> Event | None:
        topics = self.topics()
        if not topics:
            return None
        topic = c.choice(topics)
        current = self.state()["topics"][topic]["configs"].get(UNCLEAN, "false")
        kept = {}
        if self.min_isr_configs and MIN_ISR in self.state()["topics"][topic]["configs"]:
            kept = {MIN_ISR: self.state()["topics"][topic]["configs"][MIN_ISR]}
        if c.chance(0.15):
            return {"type": "TopicConfigChange", "topic": topic, "configs": kept}
        flipped = "false" if current == "true" else "true"
        return {"type": "TopicConfigChange", "topic": topic, "configs": {**kept, UNCLEAN: flipped}}

    def build_alter_partition(self, c: Chooser) -> Event | None:
        """What the leader sends: its own leader and partition epochs and a new ISR that
        keeps itself, drops a follower or adds a replica it believes caught up; a RECOVERING
        leader reports recovery with ISR = [itself]. Sometimes stale or refused."""
        state = self.state()
        led = [(k, p) for k, p in state["partitions"].items() if p["leader"] >= 0]
        if not led:
            return None
        key, p = c.choice(led)
        topic, _, num = key.rpartition("-")
        leader = p["leader"]
        brokers = state["brokers"]
        isr = list(p["isr"])
        recovery = "RECOVERED"
        live = [r for r in p["replicas"] if str(r) in brokers and is_live(brokers[str(r)])]
        followers = [r for r in isr if r != leader]
        addable = [r for r in live if r not in isr]
        if p["leader_recovery_state"] == "RECOVERING" and not c.chance(0.2):
            isr = [leader]  # recovery done, followers may join later
        elif followers and (not addable or c.chance(0.35)):
            drop = c.choice(followers)
            isr = [r for r in isr if r != drop]
        elif addable:
            isr.append(c.choice(addable))
        elif c.chance(0.5):
            return None
        if not isr:
            return None
        if c.chance(0.05):
            # a replica the leader still believes caught up but the controller sees down
            down = [r for r in p["replicas"] if r not in isr and r not in live]
            if down:
                isr.append(c.choice(down))
        event: Event = {
            "type": "AlterPartition",
            "topic": topic,
            "partition": int(num),
            "broker_id": leader,
            "leader_epoch": p["leader_epoch"],
            "partition_epoch": p["partition_epoch"],
            "isr": isr,
            "leader_recovery_state": recovery,
        }
        if str(leader) in brokers:
            event["broker_epoch"] = brokers[str(leader)]["broker_epoch"]
        if c.chance(0.15):
            field = c.choice(("leader_epoch", "partition_epoch", "broker_epoch"))
            if event.get(field) is not None and event[field] > 0:
                event[field] -= (
                    1  # stale: FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION / STALE_BROKER_EPOCH
                )
        return event

    def build_tick(self, c: Chooser) -> Event | None:
        """Time passes, up to 10 minutes: a due automatic rebalance check runs."""
        return {"type": "ControllerTick", "ts": self.now + c.integer(1, 600) * 1000}

    def build_broker_config_change(self, c: Chooser) -> Event | None:
        """The cluster-wide dynamic unclean default set, flipped or returned to the static one."""
        value = c.choice(("true", "false", None))
        return {"type": "BrokerConfigChange", "configs": {UNCLEAN: value}}

    def build_dir_failure(self, c: Chooser) -> Event | None:
        """Some of a broker's replicas answer KAFKA_STORAGE_ERROR (a failed log dir)."""
        state = self.state()
        b = c.choice(BROKER_IDS)
        hosted = sorted(
            (t, p) for t, p in self.partitions() if b in state["partitions"][f"{t}-{p}"]["replicas"]
        )
        if not hosted:
            return None
        failed = c.sample(hosted, c.integer(1, len(hosted)))
        return {
            "type": "ReplicaDirFailure",
            "broker_id": b,
            "partitions": [{"topic": t, "partition": p} for t, p in sorted(failed)],
        }

    def build_controller_move(self, c: Chooser) -> Event | None:
        self.controller_epoch += 1
        return {
            "type": "ControllerFailover",
            "controller_id": c.choice(BROKER_IDS),
            "controller_epoch": self.controller_epoch,
        }

    # -- seeded driver -------------------------------------------------------------------

    KINDS: tuple[tuple[str, int], ...] = (
        ("broker_failure", 8),
        ("broker_startup", 10),
        ("controlled_shutdown", 5),
        ("topic_creation", 8),
        ("partition_expansion", 2),
        ("topic_deletion", 4),
        ("stop_replica_response", 10),
        ("reassignment", 8),
        ("election", 6),
        ("config_change", 4),
        ("alter_partition", 16),
        ("controller_move", 1),
        ("tick", 4),
        ("broker_config_change", 2),
        ("dir_failure", 3),
    )

    def next_event(self, c: Chooser) -> Event | None:
        names = [n for n, w in self.KINDS for _ in range(w)]
        return getattr(self, f"build_{c.choice(names)}")(c)


def generate_log(
    source: int | random.Random | Callable[[Any], Any],
    n_events: int = 40,
    config: ControllerConfig | None = None,
    initial_topics: int | None = None,
    min_isr_configs: bool = False,
) -> list[Event]:
    """A cluster log: broker startups, optional pre-existing topics, ControllerFailover, then
    `n_events` random active events.

    `source` is a seed, a `random.Random`, or a Hypothesis `draw` function (from
    `st.data().draw` or inside `@st.composite`). The same seed always gives the same log.
    `config` is the controller configuration the shadow engine uses to pick state-aware
    events; replay the log with the same configuration.
    """
    if callable(source) and not isinstance(source, random.Random):
        chooser: Chooser = DrawChooser(source)
    else:
        chooser = RandomChooser(
            source if isinstance(source, random.Random) else random.Random(source)
        )
    builder = LogBuilder(config, min_isr_configs)
    builder.start_cluster(
        chooser, chooser.integer(0, 2) if initial_topics is None else initial_topics
    )
    produced = 0
    while produced < n_events:
        event = builder.next_event(chooser)
        if event is not None:
            builder.emit(event)
            produced += 1
    return builder.events


def event_logs(n_events: int = 40, config: ControllerConfig | None = None) -> Any:
    """A Hypothesis strategy of event logs (lists of contract event dicts)."""
    from hypothesis import strategies as st

    @st.composite
    def logs(draw: Callable[[Any], Any]) -> list[Event]:
        return generate_log(draw, n_events, config)

    return logs()
