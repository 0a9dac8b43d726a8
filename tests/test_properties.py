"""Property tests (hypothesis): mutated real inputs never crash the Python readers with anything
but SeedfwError (the one-clear-line error).

Inputs are real: LZ4 containers and boot packages of real AArch64 code and data (firmware/common
and the LZ4 decoder cross-compiled, or earlier builds' ELFs — the same seeds `invoke fuzz` uses),
the boards' real DVFS tables, and FIT images made by the real mkimage (one unsigned, one signed
with an RSA key made by openssl and checked against its public-key DTB). Mutations: bit flips,
truncation, insertion, deletion, header fields set to edge values; for the formats with a header
crc, half of the cases get the crc recomputed so the mutation reaches the code behind it.
"""

from __future__ import annotations

import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seedfw import boards, dvfs, fuzz
from seedfw.compress import container
from seedfw.errors import SeedfwError
from seedfw.images import fit, inspect, package
from seedfw.images.entries import DvfsEntry, FdtEntry, FirmwareEntry, ModelEntry

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
EDGE = (0, 1, 2, 3, 4, 0x3F, 0x40, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
        0xFFFFFFFF, 0xFFFFFFFE)


class Inputs(dict):
    def __repr__(self):       # hypothesis prints arguments of a failing example: keep it short
        return "<real inputs>"


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """Valid inputs of every format, from real sections, tables and tools."""
    work = tmp_path_factory.mktemp("props")
    sections = dict(fuzz.seed_sections(work))
    text = next((v for k, v in sections.items() if k.endswith(".text")),
                next(iter(sections.values())))
    rodata = next((v for k, v in sections.items() if k.endswith((".rodata", ".ro"))), text)
    table = dvfs.encode(dvfs.load(boards.get("rk3588").dvfs_file), "balanced")
    model = rodata[:1500]
    entries = [FirmwareEntry("payload", text[:2048], load=0x60000000), DvfsEntry("dvfs", table),
               ModelEntry("m-raw", model, len(model), 64),
               ModelEntry("m-lz4", container.write_container(model, 1024, 9), len(model), 64,
                          compression="lz4")]
    out = Inputs({"container": container.write_container(text[:6000], 1024, 9),
                  "container_raw": text[:6000],
           "container_dict": container.write_container(text[:3000], 1024, 9, rodata[:2048]),
           "dict": rodata[:2048], "package": package.encode(entries), "dvfs": table})
    dtb = subprocess.run(["dtc", "-q", "-I", "dts", "-O", "dtb"], input=dvfs.to_dts(
        dvfs.load(boards.get("rk3588").dvfs_file)).encode(), capture_output=True, check=True).stdout
    fit_entries = entries[:2] + [FdtEntry("opp", dtb)] + entries[2:]
    out["fit"] = fit.build(fit_entries, work / "plain.itb", description="props").read_bytes()
    keys = work / "keys"
    keys.mkdir()
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048",
                    "-out", keys / "dev.key"], check=True, capture_output=True)
    subprocess.run(["openssl", "req", "-batch", "-new", "-x509", "-days", "1", "-subj", "/CN=p",
                    "-key", keys / "dev.key", "-out", keys / "dev.crt"], check=True,
                   capture_output=True)
    out["fit_signed"] = fit.build(fit_entries[:3], work / "signed.itb", description="props",
                                  key_dir=keys, key_name="dev",
                                  pubkey_dtb=work / "pub.dtb").read_bytes()
    out["pubkey"] = work / "pub.dtb"
    return out


@st.composite
def mutations(draw, header_len: int = 64):
    """A list of edits; applied in order by `mutate`."""
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "trunc", "insert", "delete", "field", "field"]))
        pos = draw(st.integers(0, 1 << 20))
        if kind == "flip":
            ops.append((kind, pos, draw(st.integers(0, 7))))
        elif kind == "trunc":
            ops.append((kind, pos, None))
        elif kind == "insert":
            ops.append((kind, pos, draw(st.binary(min_size=1, max_size=16))))
        elif kind == "delete":
            ops.append((kind, pos, draw(st.integers(1, 64))))
        else:
            width = draw(st.sampled_from([1, 2, 4]))
            value = draw(st.one_of(st.sampled_from(EDGE), st.integers(0, 0xFFFFFFFF)))
            ops.append((kind, draw(st.integers(0, header_len - 1)) // width * width,
                        (width, value, pos)))
    return ops


def mutate(blob: bytes, ops, hot: list[tuple[int, int]] = ()) -> bytes:
    """Apply the edits; a `field` edit at a position beyond the header lands in one of the `hot`
    regions (entry table, FDT structure or strings block), so edits are not wasted on data."""
    b = bytearray(blob)
    for kind, pos, arg in ops:
        if not b and kind != "insert":
            continue
        p = pos % (len(b) + (kind == "insert")) if b else 0
        if kind == "flip":
            b[p] ^= 1 << arg
        elif kind == "trunc":
            del b[p:]
        elif kind == "insert":
            b[p:p] = arg
        elif kind == "delete":
            del b[p:p + arg]
        else:
            width, value, anywhere = arg
            regions = [h for h in hot if h[1] > h[0]]
            if regions and pos >= 16:
                start, end = regions[anywhere % len(regions)]
                pos = start + (anywhere // len(regions)) % (end - start)
            if pos + width <= len(b):
                b[pos:pos + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
    return bytes(b)


def only_seedfw_errors(fn, *args):
    try:
        fn(*args)
    except SeedfwError as exc:
        assert exc.line() and "\n" not in exc.line()


# --------------------------------------------------------------------------- containers

def _fix_container_crc(b: bytes) -> bytes:
    if len(b) < 40:
        return b
    count = struct.unpack_from("<I", b, 12)[0]
    end = 40 + 4 * count
    if end > len(b):
        return b
    crc = zlib.crc32(b[40:end], zlib.crc32(b[:36]))
    return b[:36] + struct.pack("<I", crc) + b[40:]


@SETTINGS
@given(ops=mutations(40), fix=st.booleans(), which=st.sampled_from(["container", "container_dict"]))
def test_container_reader_mutations(real, ops, fix, which):
    blob = mutate(real[which], ops, hot=[(40, 80)])
    if fix:
        blob = _fix_container_crc(blob)
    dictionary = real["dict"] if which == "container_dict" else None
    only_seedfw_errors(container.read_container, blob, dictionary)


def test_container_mutation_negative_control(real):
    """The property is not vacuous: an unmutated container reads back, a flipped one fails."""
    assert container.read_container(real["container"]) == real["container_raw"]
    with pytest.raises(SeedfwError):
        container.read_container(mutate(real["container"], [("flip", 200, 3)]))


# --------------------------------------------------------------------------- boot package

def _fix_package_crc(b: bytes) -> bytes:
    if len(b) < package.HEADER.size:
        return b
    count = struct.unpack_from("<H", b, 10)[0]
    end = package.HEADER.size + package.ENTRY.size * count
    if end > len(b):
        return b
    z = bytearray(b[:end])
    struct.pack_into("<I", z, package.HEADER_CRC_OFFSET, 0)
    return b[:24] + struct.pack("<I", zlib.crc32(z)) + b[28:]


@SETTINGS
@given(ops=mutations(32), fix=st.booleans())
def test_package_reader_mutations(real, ops, fix):
    blob = real["package"]
    n = struct.unpack_from("<H", blob, 10)[0]
    blob = mutate(blob, ops, hot=[(32, 32 + package.ENTRY.size * n)])
    if fix:
        blob = _fix_package_crc(blob)
    only_seedfw_errors(package.decode, blob)


# --------------------------------------------------------------------------- DVFS table

@SETTINGS
@given(ops=mutations(48), fix=st.booleans())
def test_dvfs_decode_mutations(real, ops, fix):
    blob = mutate(real["dvfs"], ops, hot=[(0, 48)])
    if fix and len(blob) >= 16:
        total = min(struct.unpack_from("<I", blob, 8)[0], len(blob))
        z = bytearray(blob[:total])
        if total >= 16:
            struct.pack_into("<I", z, 12, 0)
            blob = blob[:12] + struct.pack("<I", zlib.crc32(z)) + blob[16:]
    only_seedfw_errors(dvfs.decode, blob)


# --------------------------------------------------------------------------- FIT and inspect

def _inspect_bytes(blob: bytes, pubkey=None):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "image.itb"
        p.write_bytes(blob)
        return inspect.inspect(p, pubkey)


def _fdt_blocks(blob: bytes) -> list[tuple[int, int]]:
    """The structure block and the strings block (property names) of an FDT."""
    off_struct, off_strings = struct.unpack_from(">II", blob, 8)
    size_strings, size_struct = struct.unpack_from(">II", blob, 32)
    return [(off_struct, off_struct + size_struct), (off_strings, off_strings + size_strings)]


@SETTINGS
@given(ops=mutations(40), signed=st.booleans())
def test_fit_inspect_mutations(real, ops, signed):
    blob = real["fit_signed" if signed else "fit"]
    mutated = mutate(blob, ops, hot=_fdt_blocks(blob))
    only_seedfw_errors(_inspect_bytes, mutated, real["pubkey"] if signed else None)


@SETTINGS
@given(ops=mutations(32), fix=st.booleans())
def test_package_inspect_mutations(real, ops, fix):
    blob = real["package"]
    n = struct.unpack_from("<H", blob, 10)[0]
    blob = mutate(blob, ops, hot=[(32, 32 + package.ENTRY.size * n)])
    only_seedfw_errors(_inspect_bytes, _fix_package_crc(blob) if fix else blob)


def test_inspect_negative_controls(real):
    """Unmutated inputs verify; the signed FIT's signature checks with its own key."""
    assert _inspect_bytes(real["fit"]).ok
    report = _inspect_bytes(real["fit_signed"], real["pubkey"])
    assert report.ok and any(r.type == "signature" and r.hash_ok for r in report.rows)
    assert _inspect_bytes(real["package"]).ok
