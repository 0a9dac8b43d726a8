"""Registries are the only list of names (issue 19): every registered flash runner and counter
source documents itself, board.yaml's enums are the registries' names, and every board's flash
backend and counter source resolves to a class."""

from __future__ import annotations

import pytest

from seedfw import boards
from seedfw.counters import REGISTRY as SOURCES
from seedfw.errors import SeedfwError
from seedfw.flash import REGISTRY as RUNNERS
from seedfw.flash.base import COMMANDS, COMMON_OPTIONS, FlashRunner
from seedfw.registry import Registry


@pytest.mark.parametrize("registry", [RUNNERS, SOURCES], ids=lambda r: r.kind)
def test_every_registered_plugin_has_a_docstring(registry):
    for name, cls in registry.classes():
        own = cls.__dict__.get("__doc__") or ""
        assert len(own.strip()) > 20, f"{registry.kind} {name}: {cls.__name__} has no docstring"
        assert (cls.__module__.rsplit(".", 1)[-1], cls.name) and cls.name == name


def test_schema_enums_are_the_registry_names():
    props = boards.SCHEMA["properties"]
    assert props["flash"]["properties"]["backend"]["enum"] == list(RUNNERS.names())
    assert props["counters"]["enum"] == list(SOURCES.names())
    assert list(RUNNERS.names()) == ["pyocd", "rockusb", "sdcard", "qemu"]


@pytest.mark.parametrize("name", boards.names())
def test_every_board_resolves_its_runner_and_counter_source(name):
    board = boards.get(name)
    runner = RUNNERS.get(board.flash_backend)
    assert issubclass(runner, FlashRunner) and runner.name == board.flash_backend
    assert SOURCES.get(board.counters).name == board.counters


def test_runners_declare_capabilities_and_their_own_options():
    for name, cls in RUNNERS.classes():
        assert "flash" in cls.capabilities and cls.capabilities <= COMMANDS, name
        assert not set(cls.options) & set(COMMON_OPTIONS), name


def test_invoke_flash_options_come_from_the_runners():
    from seedfw.cli.flash import flash, runner_options

    own = runner_options()
    assert set(own) == {o for cls in (c for _, c in RUNNERS.classes()) for o in cls.options}
    assert own["to"].startswith("sdcard: ") and own["loader"].startswith("rockusb: ")
    names = {a.name for a in flash.get_arguments()}
    assert names == set(COMMON_OPTIONS) | set(own)


def test_an_unknown_name_lists_the_known_ones(tmp_path):
    with pytest.raises(SeedfwError) as err:
        RUNNERS.get("jlink", tmp_path / "board.yaml", "flash.backend")
    assert err.value.line() == (f"{tmp_path / 'board.yaml'}: flash.backend: no flash backend "
                                "'jlink' (known: pyocd, rockusb, sdcard, qemu)")
    with pytest.raises(ValueError):
        Registry("thing", {"x": "no-colon"})


def test_names_import_nothing():
    import subprocess
    import sys

    code = ("import sys; from seedfw.flash import REGISTRY; REGISTRY.names(); "
            "print(any(m.startswith(('seedfw.flash.pyocd_runner', 'pyocd', 'elftools')) "
            "for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_runner_without_a_capability_is_refused_before_it_is_created():
    from seedfw.flash.qemu_drive import QemuDriveRunner
    from seedfw.flash.sdcard import SdcardRunner

    with pytest.raises(SeedfwError) as err:
        SdcardRunner.require("flash", "reset")
    assert err.value.line() == ("flash.backend: the sdcard runner cannot reset (it can: flash, "
                                "verify)")
    with pytest.raises(SeedfwError) as err:
        QemuDriveRunner.require("reset")
    assert err.value.message == "the qemu runner cannot reset (it can: erase, flash, verify)"


def test_every_counter_source_reads_its_own_way():
    from seedfw.counters.base import CounterSource

    for name, cls in SOURCES.classes():
        assert cls.read.__func__ is not CounterSource.read.__func__, name
