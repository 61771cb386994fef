"""`quick_init` keeps a frozen dataclass's constructor as it was: signature, defaults,
immutability, and the refusals of anything it does not support."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from state_machines.model import LeaderAndIsr
from state_machines.states import LeaderRecoveryState
from state_machines.values import quick_init


@dataclasses.dataclass(frozen=True, slots=True)
class Plain:
    a: int
    b: tuple[int, ...]
    c: str | None = None
    d: bool = False


Quick = quick_init(
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
def test_it_builds_the_same_values_as_the_generated_constructor(args: tuple, kwargs: dict) -> None:
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
        value.a = 2  # type: ignore[misc]
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
        a: tuple = dataclasses.field(default_factory=tuple)

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    for cls in (Mutable, Factory, NoSlots):
        with pytest.raises(TypeError):
            quick_init(cls)
