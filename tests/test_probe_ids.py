"""Probe id checks (seedfw.flash.probe_ids): run before pyOCD is imported or QEMU started."""

from __future__ import annotations

import pytest

from seedfw.errors import SeedfwError
from seedfw.flash.probe_ids import check_probe_uid, parse_qemu_uid, probe_types


def test_known_probe_types_come_from_installed_plugins():
    # pyOCD's own probe types and our `qemu` plug-in, from package metadata alone.
    assert {"cmsisdap", "stlink", "qemu"} <= set(probe_types())


@pytest.mark.parametrize("uid", ["qemu:auto", "QEMU:auto", "qemu:127.0.0.1:1234", "qemu:localhost:3333",
                                 "cmsisdap:0240000034544e45", "stlink:066DFF495056805087",
                                 "0240000034544e45"])
def test_good_ids_pass_unchanged(uid):
    assert check_probe_uid(uid) == uid


@pytest.mark.parametrize("uid, message", [
    ("qemu:", "--probe: 'qemu:' is not a QEMU probe id (expected qemu:auto or qemu:HOST:PORT with a "
              "numeric port)"),
    ("qemu:host:notaport", "--probe: 'qemu:host:notaport' is not a QEMU probe id (expected qemu:auto or "
                           "qemu:HOST:PORT with a numeric port)"),
    ("qemu:host:70000", "--probe: 'qemu:host:70000' is not a QEMU probe id (expected qemu:auto or "
                        "qemu:HOST:PORT with a numeric port)"),
    ("cmsisdap:", "--probe: 'cmsisdap:' names no probe after 'cmsisdap:'"),
    ("", "--probe: empty probe id"),
])
def test_bad_ids_one_line(uid, message):
    with pytest.raises(SeedfwError) as err:
        check_probe_uid(uid)
    assert err.value.line() == message


def test_unknown_type_lists_the_known_ones():
    with pytest.raises(SeedfwError) as err:
        check_probe_uid("nosuchprobe:1")
    assert err.value.line() == (f"--probe: unknown probe type 'nosuchprobe' in 'nosuchprobe:1' "
                                f"(known: {', '.join(probe_types())})")


def test_parse_qemu_uid():
    assert parse_qemu_uid("qemu:127.0.0.1:3333") == ("127.0.0.1", 3333)
    with pytest.raises(ValueError):
        parse_qemu_uid("qemu:auto")
