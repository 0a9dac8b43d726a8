"""qemu probe plug-in pieces that need no QEMU: RSP framing, UID parsing, and the synthesised
CoreSight IDs, checked against pyOCD's own component table (what discovery will match them to)."""

from __future__ import annotations

import pytest

from seedfw.flash.qemu_probe import debug_regs, rsp
from seedfw.flash.qemu_probe.probe import parse_uid


def test_rsp_escape_roundtrip_and_checksum():
    raw = b"M0,4:}#$*ab"
    assert rsp._unescape(rsp._escape(raw)) == raw
    assert b"#" not in rsp._escape(raw)[1:] and rsp._checksum(b"OK") == b"9a"


def test_rsp_hex_packets_pass_through_and_special_bytes_still_escape():
    """The fast path (no per-byte loop) leaves a hex packet as it is; one special byte anywhere
    still takes the escaping path (the negative control)."""
    hexed = b"M20000000,4:" + bytes(range(256)).hex().encode()
    assert rsp._escape(hexed) == hexed and rsp._unescape(hexed) == hexed
    for special in b"#$}*":
        raw = hexed + bytes((special,))
        assert rsp._escape(raw) == hexed + bytes((0x7D, special ^ 0x20))
    assert rsp._unescape(b"ab}\x03cd") == b"ab#cd"  # 0x03 ^ 0x20 is "#"


def test_rsp_chunk_fits_qemu_packet_size():
    """QEMU 7.2 announces PacketSize=1000 (4096 characters) and drops a longer packet: the largest
    `M` this client sends (highest address, full chunk) must fit."""
    assert len(b"$M%x,%x:" % (0xFFFFFFFF, rsp.CHUNK) + b"00" * rsp.CHUNK + b"#00") < 0x1000


def test_rsp_run_length_decoding():
    assert rsp._unescape(b"0* ") == b"0" * 4  # ' ' is 32: 32 - 29 = 3 more repeats


def test_parse_uid():
    assert parse_uid("qemu:127.0.0.1:3333") == ("127.0.0.1", 3333)
    assert parse_uid("localhost:1234") == ("localhost", 1234)
    with pytest.raises(ValueError, match="qemu:HOST:PORT"):
        parse_uid("qemu:auto")


def _component(ids: dict[int, int]):
    from pyocd.coresight.component_ids import COMPONENT_MAP

    word = lambda off: ids.get(off, 0)  # noqa: E731
    cidr = sum(word(0xFF0 + 4 * i) << (8 * i) for i in range(4))
    pidr = sum(word(0xFE0 + 4 * i) << (8 * i) for i in range(4)) | (word(0xFD0) << 32)
    designer = ((pidr >> 12) & 0x7F) | (((pidr >> 32) & 0xF) << 8)
    cls = (cidr >> 12) & 0xF
    assert cidr & 0xFFFF0FFF == 0xB105000D
    return cls, COMPONENT_MAP.get((designer, cls, pidr & 0xFFF, 0, 0))


def test_synthesised_ids_are_what_pyocd_expects():
    cls, scs = _component(debug_regs.SCS_IDS)
    assert (cls, scs.name, scs.product) == (0xE, "SCS", "v7-M")
    cls, fpb = _component(debug_regs.FPB_IDS)
    assert (cls, fpb.name) == (0xE, "FPB")
    cls, _ = _component(debug_regs.ROM_IDS)
    assert cls == 0x1  # ROM table class


def test_rom_table_entries_point_at_scs_and_fpb():
    base = debug_regs.ROM_BASE
    targets = [(base + (e & 0xFFFFF000)) & 0xFFFFFFFF for e in debug_regs.ROM_ENTRIES if e]
    assert targets == [debug_regs.SCS_BASE, debug_regs.FPB_BASE]
    assert debug_regs.ROM_ENTRIES[-1] == 0  # end marker


def test_counters_through_the_qemu_plugin_are_emulated_not_live():
    """Issue 11: pyOCD reaches QEMU through this plug-in; counters read that way are emulated
    (with QEMU's version when seedfw started it), and only a real probe gives 'live'."""
    import re

    from seedfw import boards
    from seedfw.counters import provenance

    board = boards.get("mps2-an385")
    started = provenance.through_pyocd(board, "qemu:127.0.0.1:4321", "seedfw_mps2_an385", True)
    assert started["source"] == "emulated" and started["started_by_seedfw"] is True
    assert re.fullmatch(r"emulated in QEMU \d+\.\d+(\.\d+)?, mps2-an385", provenance.label(started))
    running = provenance.through_pyocd(board, "QEMU:localhost:3333", None, False)
    assert provenance.label(running) == "emulated in QEMU (version unknown), mps2-an385"
    live = provenance.through_pyocd(board, "cmsisdap:0240000032044e45", "stm32f4", False)
    assert (live["source"], provenance.label(live)) == ("live", "live, probe cmsisdap:0240000032044e45")
