"""`state_machines/speed.py`: each speed trick keeps the semantics it stands in for.

`quick_init` must keep a frozen dataclass's constructor as it was: signature, defaults,
immutability, equality, and the refusals of anything it does not support; checked on a
sample class and on every class of the core that uses it, each against the plain frozen
dataclass of the same fields. `document_writer` must write what the plain loop over a
record's fields writes, for every record class of the core that uses it.

`IdentityMemo` is keyed by `id()`, which is unique only while its object lives: the memo
must hold the objects of every key it keeps (else a dead object's id, reused by a new one,
would find the dead one's value), and must let them go when its bound empties it.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import inspect
import pkgutil
import weakref
from typing import Any

import pytest

import state_machines
from state_machines import outputs
from state_machines.model import LeaderAndIsr
from state_machines.speed import IdentityMemo, document_writer, new_tuple, quick_init
from state_machines.states import LeaderRecoveryState


class Obj:
    """A weak-referenceable stand-in for a broker view (tuples cannot be referenced
    weakly); equal to every other, so only identity tells two apart."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Obj)

    def __hash__(self) -> int:
        return 0


def test_a_hit_is_for_the_very_objects_not_equal_ones() -> None:
    memo: IdentityMemo[str] = IdentityMemo(8)
    a, b = Obj(), Obj()
    assert memo.put((a, b), "ab") == "ab"
    assert memo.get(a, b) == "ab"
    assert memo.get(b, a) is None  # order counts
    assert memo.get(Obj(), b) is None  # an equal object is not the same object
    assert memo.get(a) is None  # and neither is a shorter key
    assert memo.get_pair(a, b) == "ab" and memo.get_pair(b, a) is None
    assert memo.get_pair(Obj(), b) is None


def test_the_objects_of_a_key_live_while_their_entry_does() -> None:
    memo: IdentityMemo[int] = IdentityMemo(8)
    a, b = Obj(), Obj()
    alive_a, alive_b = weakref.ref(a), weakref.ref(b)
    key = (id(a), id(b))
    memo.put((a, b), 1)
    del a, b
    gc.collect()
    # without the memo's references both would be gone and their ids free for reuse
    assert alive_a() is not None and alive_b() is not None
    assert (id(alive_a()), id(alive_b())) == key
    assert memo.get(alive_a(), alive_b()) == 1


def test_a_dead_objects_id_reused_by_a_new_object_is_not_a_hit() -> None:
    """The failure the holding prevents: made while nothing else keeps the objects, then
    many new objects of the same size (CPython reuses freed memory at once)."""
    memo: IdentityMemo[str] = IdentityMemo(1_000_000)
    for i in range(2000):
        memo.put((Obj(),), f"value {i}")
    assert len(memo) == 2000  # every object held, so every id distinct
    assert all(memo.get(Obj()) is None for _ in range(2000))


def test_the_bound_empties_the_memo_and_releases_its_objects() -> None:
    memo: IdentityMemo[int] = IdentityMemo(3)
    objs = [Obj() for _ in range(3)]
    refs = [weakref.ref(o) for o in objs]
    for i, o in enumerate(objs):
        memo.put((o,), i)
    assert len(memo) == 3
    del objs, o
    gc.collect()
    assert all(r() is not None for r in refs)  # held by the memo alone
    newest = Obj()
    memo.put((newest,), 9)  # the fourth: the memo empties first
    assert len(memo) == 1 and memo.get(newest) == 9
    gc.collect()
    assert all(r() is None for r in refs)  # let go
    memo.clear()
    assert len(memo) == 0 and memo.get(newest) is None


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="bound 0"):
        IdentityMemo(0)


def test_the_partition_view_memo_is_an_identity_memo_that_holds_its_keys() -> None:
    """`partition._VIEWS`, the core's one id-keyed memo, is this class (a plain dict keyed by
    id would pass every other test here)."""
    from state_machines import partition

    assert isinstance(partition._VIEWS, IdentityMemo)


# --- quick_init ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: tuple[int, ...]
    c: str | None = None
    d: bool = False


Quick: type[Any] = quick_init(
    dataclasses.make_dataclass(
        "Quick",
        [
            ("a", int),
            ("b", tuple),
            ("c", "str | None", dataclasses.field(default=None)),
            ("d", bool, dataclasses.field(default=False)),
        ],
        frozen=True,
        slots=True,
    )
)


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((1, (2, 3)), {}),
        ((1, (2,), "x"), {}),
        ((1, ()), {"d": True}),
        ((), {"b": (4,), "a": 5, "c": "y", "d": True}),
    ],
)
def test_it_builds_the_same_values_as_the_generated_constructor(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)
    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert quick == Quick(*args, **kwargs) and hash(quick) == hash(Quick(*args, **kwargs))


def test_signature_refusals_and_immutability_are_the_dataclass_own() -> None:
    assert list(inspect.signature(Quick).parameters) == ["a", "b", "c", "d"]
    with pytest.raises(TypeError):
        Quick(1)  # missing b
    with pytest.raises(TypeError):
        Quick(1, (), e=2)
    value = Quick(1, ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.a = 2
    assert dataclasses.replace(value, c="z") == Quick(1, (), "z")


def test_a_core_value_keeps_its_defaults() -> None:
    la = LeaderAndIsr(1, 0, (1, 2), 0)
    assert la.leader_recovery_state is LeaderRecoveryState.RECOVERED and la.controller_epoch == 0
    assert la.written(3) == LeaderAndIsr(1, 0, (1, 2), 1, LeaderRecoveryState.RECOVERED, 3)


def test_what_it_cannot_preserve_is_refused() -> None:
    @dataclasses.dataclass(slots=True)
    class Mutable:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        a: tuple[int, ...] = dataclasses.field(default_factory=tuple)

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class KwOnly:
        a: int = dataclasses.field(kw_only=True)

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (Mutable, Factory, NoSlots, KwOnly, PostInit):
        with pytest.raises(TypeError):
            quick_init(cls)


def _quick_classes() -> list[type]:
    """Every class of the core whose `__init__` quick_init made (its generated function's
    module is `state_machines.speed`)."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(state_machines.__path__, "state_machines."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            init = getattr(value, "__init__", None)
            if (
                isinstance(value, type)
                and dataclasses.is_dataclass(value)
                and getattr(init, "__module__", None) == "state_machines.speed"
                and value.__module__ == info.name
            ):
                found[f"{info.name}.{value.__qualname__}"] = value
    return [found[k] for k in sorted(found)]


QUICK_CLASSES = _quick_classes()


def test_the_core_classes_are_found() -> None:
    """The walk below is not vacuous: the classes the fan-out builds most are in it."""
    names = {c.__name__ for c in QUICK_CLASSES}
    assert {"LeaderAndIsr", "PartitionRecord", "Command", "LeaderAndIsrRecord"} <= names


def _plain_twin(cls: type) -> type:
    """The frozen, slotted dataclass of `cls`'s fields, with the generated `__init__`."""
    return dataclasses.make_dataclass(
        cls.__name__,
        [
            (f.name, f.type)
            if f.default is dataclasses.MISSING
            else (f.name, f.type, dataclasses.field(default=f.default))
            for f in dataclasses.fields(cls)
        ],
        frozen=True,
        slots=True,
    )


@pytest.mark.parametrize("cls", QUICK_CLASSES, ids=lambda c: c.__qualname__)
def test_each_core_class_constructor_is_the_plain_dataclass_one(cls: type) -> None:
    """Signature (names, order, kinds, defaults), the value each field gets, frozenness,
    equality and hashing: as the plain dataclass of the same fields has them. A field added
    with a default factory or as keyword-only would already fail at import (refused)."""
    twin = _plain_twin(cls)
    mine, theirs = inspect.signature(cls), inspect.signature(twin)
    assert [(p.name, p.kind, p.default) for p in mine.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    assert vars(cls)["__init__"].__qualname__ == f"{cls.__qualname__}.__init__"
    required = [p.name for p in mine.parameters.values() if p.default is inspect.Parameter.empty]
    # a distinct marker per required field: each must land in its own field
    markers = {name: (name,) for name in required}
    value, plain = cls(**markers), twin(**markers)
    for f in dataclasses.fields(cls):
        assert getattr(value, f.name) is getattr(plain, f.name), f.name
    assert value == cls(**markers) and hash(value) == hash(cls(**markers))
    if required:
        assert value != cls(**{**markers, required[0]: ("other",)})
        with pytest.raises(TypeError):
            cls(**{k: v for k, v in markers.items() if k != required[0]})
    first = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, first, None)
    assert dataclasses.replace(value) == value


# --- document_writer -------------------------------------------------------------------


def _plain_document(
    record: Any, cause_offset: int, cause_id: str | None, seq: int
) -> dict[str, Any]:
    """What `outputs.to_contract` stands for, by the plain loop: the envelope, then each field
    in declaration order, a tuple-typed field's tuple as a list."""
    doc: dict[str, Any] = {
        "v": 1,
        "type": record.TYPE,
        "cause_offset": cause_offset,
        "cause_id": cause_id,
        "seq": seq,
    }
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        doc[f.name] = list(value) if "tuple" in str(f.type) and isinstance(value, tuple) else value
    return doc


# the record classes written by a generated writer (the two others have hand-written ones)
WRITTEN = [
    cls
    for cls in vars(outputs).values()
    if isinstance(cls, type)
    and dataclasses.is_dataclass(cls)
    and isinstance(getattr(cls, "TYPE", None), str)
    and cls.__module__ == outputs.__name__
    and cls not in (outputs.UpdateMetadataRecord, outputs.AppendedRecord)
]


def test_the_written_classes_are_found() -> None:
    names = {c.__name__ for c in WRITTEN}
    assert {"LeaderAndIsrRecord", "StopReplicaRecord", "StateChangeFailedRecord"} <= names


@pytest.mark.parametrize("cls", WRITTEN, ids=lambda c: c.__name__)
def test_each_record_is_written_as_the_plain_loop_writes_it(cls: type) -> None:
    fields = dataclasses.fields(cls)
    # a distinct value per field, a tuple where the field holds tuples: each must land
    # under its own key, in order, a tuple as a list
    values = {f.name: (f.name, 1) if "tuple" in str(f.type) else f"<{f.name}>" for f in fields}
    record = cls(**values)
    doc = outputs.to_contract(record, 5, "cause", 7)
    expected = _plain_document(record, 5, "cause", 7)
    assert doc == expected and list(doc) == list(expected)
    assert list(doc)[5:] == [f.name for f in fields]  # every field, none twice, in order
    # a tuple-typed field holding None (an absent list) stays None
    nones = cls(**{k: None if isinstance(v, tuple) else v for k, v in values.items()})
    assert outputs.to_contract(nones, 1, None, 0) == _plain_document(nones, 1, None, 0)


def test_constants_are_values_and_keys_keep_a_dict_display_order() -> None:
    marker = object()
    write = document_writer(
        (("v", 1), ("k", marker)), ("a", "b"), (("x", True), ("a", False), ("y", False))
    )

    @dataclasses.dataclass
    class R:
        x: Any
        a: Any
        y: Any

    doc = write(R((1, 2), "field a", [3]), "arg a", None)
    assert doc["k"] is marker
    # "a" keeps its first place (the argument's) and takes the later value (the field's)
    assert list(doc.items()) == [
        ("v", 1),
        ("k", marker),
        ("a", "field a"),
        ("b", None),
        ("x", [1, 2]),
        ("y", [3]),
    ]


@pytest.mark.parametrize(
    "arguments, fields",
    [
        (("seq",), (("a b", False),)),  # not an identifier: would be source text
        (("seq",), (("class", False),)),
        (("seq; import os",), ()),
        (("r",), ()),  # would hide the record
        (("list",), ()),
        (("_v",), ()),
    ],
)
def test_names_that_would_change_the_source_are_refused(
    arguments: tuple[str, ...], fields: tuple[tuple[str, bool], ...]
) -> None:
    with pytest.raises(ValueError, match="document_writer"):
        document_writer((), arguments, fields)


# --- new_tuple ------------------------------------------------------------------------


def test_new_tuple_builds_what_the_constructor_builds() -> None:
    from streaming.metadata_log.records import MetadataRecord

    values = (3, 1, "PartitionRecord", {"partition_id": 0})
    built = new_tuple(MetadataRecord, values)
    assert type(built) is MetadataRecord and built == MetadataRecord(*values)
    assert built.fields is values[3]


def _metadata_cases() -> list[tuple[str, int]]:
    from streaming.metadata_log.schemas import METADATA

    cases = []
    for schema in METADATA:
        assert schema.valid.high is not None
        cases += [(schema.name, v) for v in range(schema.valid.low, schema.valid.high + 1)]
    return cases


@pytest.mark.parametrize("name, version", _metadata_cases())
def test_each_decoded_record_has_exactly_its_class_fields(name: str, version: int) -> None:
    """The decoders' generated code builds each record with `new_tuple`, which does not
    check the count of values: every record type and version decodes to the record its
    constructor builds from the same values (twice: the memoised types' second decoding
    takes the memo's path)."""
    from streaming.metadata_log.encode import metadata_value
    from streaming.metadata_log.records import MetadataRecord, decode_metadata
    from streaming.metadata_log.schemas import METADATA_BY_NAME

    value = metadata_value(name, version)
    for _ in range(2):
        decoded = decode_metadata(value)
        assert type(decoded) is MetadataRecord
        assert len(decoded) == len(MetadataRecord._fields)
        assert decoded == MetadataRecord(*decoded)
        assert decoded[:3] == (METADATA_BY_NAME[name].api_key, version, name)


def test_each_framed_record_is_what_the_log_record_constructor_builds() -> None:
    """`batches._records` builds each LogRecord with `new_tuple`: every record of a
    batch (with a key, with a null value, with a timestamp of its own) equals the
    LogRecord its constructor builds from the same values, with exactly its fields."""
    from streaming.metadata_log.batches import LogRecord, parse_batch
    from streaming.metadata_log.encode import encode_batch, metadata_value

    value = metadata_value("FeatureLevelRecord", name="metadata.version", feature_level=21)
    records: list[bytes | tuple[bytes | None, bytes | None]] = [value, (b"k", value), (b"k", None)]
    times = [1_700_000_000_000, 1_700_000_000_007, 1_700_000_000_003]
    batch = parse_batch("test", 0, encode_batch(records, 5, timestamps=times))
    expected = [(None, value), (b"k", value), (b"k", None)]
    assert len(batch.records) == 3
    for i, record in enumerate(batch.records):
        assert type(record) is LogRecord
        assert len(record) == len(LogRecord._fields)
        assert record == LogRecord(*record)
        assert record == LogRecord(5 + i, times[i], *expected[i], ())
