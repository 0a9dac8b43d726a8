"""The maskrom loader we build from rkbin's RK3588MINIALL.ini: layout against the C header, round
trip, the real rkdeveloptool reading it, and corrupted copies rejected (negative controls)."""

from __future__ import annotations

import shutil
import struct
import subprocess

import pytest

import builds
from c_layout import c_layout, c_macros
from cli import invoke, one_error_line
from seedfw.errors import SeedfwError
from seedfw.images import loader
from seedfw.parts import rkbin

HEADER_FIELDS = ["tag", "size", "version", "merger_version", "release", "chip_type",
                 "code471_num", "code471_offset", "code471_size", "code472_num", "code472_offset",
                 "code472_size", "loader_num", "loader_offset", "loader_size", "sign_flag",
                 "rc4_flag", "reserved"]
ENTRY_FIELDS = ["size", "type", "name", "data_offset", "data_size", "data_delay"]


def _offsets(fmt: str) -> list[int]:
    """Byte offset of each field of a packed struct format ("<" + one code per field)."""
    codes = fmt[1:].replace(" ", "")
    out, i, parts = [], 0, []
    while i < len(codes):                       # split "40s" / "57s" / single codes
        j = i
        while codes[j].isdigit():
            j += 1
        parts.append(codes[i:j + 1])
        i = j + 1
    for n in range(len(parts)):
        out.append(struct.calcsize("<" + "".join(parts[:n])))
    return out


def test_layout_matches_c_header():
    lay = c_layout("seedfw/ldr.h", {"ldr_header": HEADER_FIELDS, "ldr_entry": ENTRY_FIELDS})
    h, e = lay["ldr_header"], lay["ldr_entry"]
    assert h["sizeof"] == loader.HEADER.size == 102 and e["sizeof"] == loader.ENTRY.size == 57
    # the Python header format spells the 7-byte time as 6 fields: fold them into "release"
    py = _offsets(loader.HEADER.format)
    py = py[:4] + [py[4]] + py[10:]
    assert [h[f] for f in HEADER_FIELDS] == py
    assert [e[f] for f in ENTRY_FIELDS] == _offsets(loader.ENTRY.format)
    m = c_macros("seedfw/ldr.h", ["LDR_TAG", "LDR_DATA_ALIGN", "LDR_ENTRY_471", "LDR_ENTRY_472",
                                   "LDR_ENTRY_LOADER"])
    assert m["LDR_TAG"].to_bytes(4, "little") == loader.TAG
    assert (m["LDR_DATA_ALIGN"], m["LDR_ENTRY_471"], m["LDR_ENTRY_472"], m["LDR_ENTRY_LOADER"]) == \
        (loader.DATA_ALIGN, loader.ENTRY_471, loader.ENTRY_472, loader.ENTRY_LOADER)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The loader as the build makes it, from the pinned recipe and blobs."""
    files = rkbin.fetch(progress=lambda m: None)
    ldr, name = loader.from_ini(files[rkbin.INI.name].read_text(), files, 1700000000)
    path = tmp_path_factory.mktemp("ldr") / name
    path.write_bytes(loader.encode(ldr))
    return path, files


def test_recipe_and_round_trip(built):
    path, files = built
    back = loader.decode(path.read_bytes())
    assert back.crc_ok and back.chip == "RK3588" and back.version == (1, 11)
    assert back.release == 1700000000                       # SOURCE_DATE_EPOCH, UTC
    assert [(e.type, e.name, e.delay) for e in back.entries] == [
        (1, "rk3588_ddr_lp4_2112", 1), (2, "rk3588_usbplug_v1.1", 0), (4, "FlashData", 0),
        (4, "FlashBoot", 0)]
    pins = [rkbin.DDR, rkbin.USBPLUG, rkbin.DDR, rkbin.SPL]
    for e, pin in zip(back.entries, pins):
        raw = files[pin.name].read_bytes()
        assert e.data[:len(raw)] == raw and not e.data[len(raw):].strip(b"\0")
        assert e.offset % loader.DATA_ALIGN == 0 and len(e.data) % loader.DATA_ALIGN == 0
    assert path.read_bytes()[:4] == b"LDR "


@pytest.mark.skipif(shutil.which("rkdeveloptool") is None, reason="rkdeveloptool not installed")
def test_real_rkdeveloptool_reads_it(built, tmp_path):
    """An independent reader: rkdeveloptool's own `unpack` (no device needed)."""
    path, _ = built
    out = subprocess.run(["rkdeveloptool", "unpack", str(path)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=30).stdout
    assert "471 num:1, 472 num:1, loader num:2" in out and "entry num: 4" in out
    assert "entry: t=1, name=rk3588_ddr_lp4_2112, off=2048, size=75776" in out
    assert "entry: t=4, name=FlashBoot, off=245760, size=239616" in out and out.rstrip().endswith("done")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FlashBoot", "FlashData",
                                                          "rk3588_ddr_lp4_2112", "rk3588_usbplug_v1.1"]


def test_inspect_round_trip_and_corruption(built, tmp_path):
    path, _ = built
    proc = invoke("inspect", path)
    assert proc.returncode == 0 and "all hashes ok" in proc.stdout, proc.stderr
    assert "= pinned rk3588_spl_v1.13.bin" in proc.stdout.replace("\n", " ") or "FlashBoot" in proc.stdout
    blob = bytearray(path.read_bytes())
    blob[0x800 + 1000] ^= 0x20                       # inside the DDR init entry
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(blob))
    assert not loader.decode(bytes(blob)).crc_ok
    proc = invoke("inspect", bad)
    assert proc.returncode == 1 and "5 entries failed verification: header + CRC32" in proc.stderr


def test_damaged_tables_are_one_clear_error(built, tmp_path):
    path, _ = built
    blob = bytearray(path.read_bytes())
    struct.pack_into("<I", blob, 0x20, len(blob))   # code472 table pointed past the end
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(blob))
    line = one_error_line(invoke("inspect", bad))
    assert line == (f"error: {bad}: offset 0x20: entry table at 0x{len(blob):x} (1 x 57 bytes) "
                    "does not fit the file")
    with pytest.raises(SeedfwError, match="not a Rockchip loader"):
        loader.decode(b"BOOT" + bytes(200))


@pytest.mark.slow
def test_build_writes_the_same_loader(rk3588_build, built):
    path, _ = built
    out = builds.image(rk3588_build, rkbin.LOADER_NAME)
    assert out.read_bytes() == path.read_bytes()     # same recipe, blobs and SOURCE_DATE_EPOCH
