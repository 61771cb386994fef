"""One error hierarchy: every exception class the tools define derives from the project's
root error, `state_machines.errors.ShadowControllerError`, so the CLI's `main` reports any
of them as one line and an exit code; and a delivery the broker did not confirm is the
shell's `streaming.kafka.errors.DeliveryFailed`, not a second class of the same name."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import shadow_controller
from shadow_controller import bridge, bridge_io, errors
from state_machines.errors import ShadowControllerError
from streaming import exits
from streaming.kafka.errors import DeliveryFailed


def tool_exceptions() -> dict[str, type[BaseException]]:
    found = {}
    for info in pkgutil.walk_packages(shadow_controller.__path__, "shadow_controller."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == info.name
            ):
                found[f"{info.name}.{name}"] = obj
    return found


def test_every_tool_error_is_a_shadow_controller_error() -> None:
    found = tool_exceptions()
    assert (
        "shadow_controller.errors.ReplayError" in found
        and "shadow_controller.errors.BridgeError" in found
    )
    assert [name for name, cls in found.items() if not issubclass(cls, ShadowControllerError)] == []


def test_one_delivery_failed() -> None:
    assert all(cls.__name__ != "DeliveryFailed" for cls in tool_exceptions().values())
    assert bridge.DeliveryFailed is bridge_io.DeliveryFailed is DeliveryFailed


def test_usage_mistakes_keep_exit_code_2() -> None:
    for cls in (errors.InspectError, errors.ReplayError):
        assert issubclass(cls, exits.UsageError) and cls.exit_code == exits.USAGE
    assert errors.Interrupted.exit_code == exits.INTERRUPTED
