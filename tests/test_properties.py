"""Property tests (hypothesis): mutated real inputs never crash the Python readers with anything
but SeedfwError (the one-clear-line error).

Inputs are real: LZ4 containers and boot packages of real AArch64 code and data (firmware/common
and the LZ4 decoder cross-compiled, or earlier builds' ELFs — the same seeds `invoke fuzz` uses),
the boards' real DVFS tables, and FIT images made by the real mkimage (one unsigned, one signed
with an RSA key made by openssl and checked against its public-key DTB). Mutations: bit flips,
truncation, insertion, deletion, header fields set to edge values; for the formats with a header
crc, half of the cases get the crc recomputed so the mutation reaches the code behind it.

Beyond "no crash", the properties that matter (each with its own example count, see below):
  * a signed FIT with one byte changed never verifies as ok, unless the change provably leaves
    everything the signature scheme covers as it was (test_signed_fit_one_byte_never_verifies);
  * a container round-trips: write -> read gives the input, and writing what was read gives the
    same bytes (test_container_round_trip), for any data, block size, level, with and without a
    dictionary;
  * a boot package with one byte changed verifies as ok exactly when that byte lies outside
    every hashed range (header + entry table under header_crc, each entry's data under its
    sha256/crc32), ranges read with the C layout of firmware/include/seedfw/pkg.h; the C verifier
    (firmware/common/pkg_verify.c, host build) gives the same verdict
    (test_package_one_byte_ok_iff_outside_hashed_ranges).
"""

from __future__ import annotations

import random
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from c_layout import INCLUDE, c_layout
from seedfw import boards, dvfs, fuzz
from seedfw.compress import container
from seedfw.errors import SeedfwError
from seedfw.images import fdt, fit, fit_sig, inspect, package
from seedfw.images.entries import DvfsEntry, FdtEntry, FirmwareEntry, ModelEntry

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
EDGE = (0, 1, 2, 3, 4, 0x3F, 0x40, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000,
        0xFFFFFFFF, 0xFFFFFFFE)


class Inputs(dict):
    def __repr__(self):       # hypothesis prints arguments of a failing example: keep it short
        return "<real inputs>"


class Case(tuple):
    def __repr__(self):
        return "<real package and its hashed ranges>"


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
    out["fit_signed_payloads"] = [e.data for e in fit_entries[:3]]
    out["pubkey"] = work / "pub.dtb"
    out["text"], out["rodata"] = text, rodata
    out["work"] = work
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


# =========================================================================== real properties
# Example counts are kept modest so the whole file stays well under 20 s on a shared 2-core
# machine; derandomize=True makes every run try the same examples (reproducible failures).

def _event(text: str) -> None:
    """hypothesis.event (shown by --hypothesis-show-statistics); a no-op in the plain controls."""
    from hypothesis.errors import InvalidArgument
    try:
        event(text)
    except InvalidArgument:
        pass


def _verdict(blob: bytes, pubkey=None) -> bool:
    """The verifier's answer: True only for a clean "ok" (a SeedfwError is a failed verdict)."""
    try:
        return _inspect_bytes(blob, pubkey).ok
    except SeedfwError:
        return False


# --------------------------------------------------------------------------- signed FIT

def _dts_lines(blob: bytes) -> list[str]:
    """The tree as the independent `dtc` decompiler prints it, one line per node / property."""
    proc = subprocess.run(["dtc", "-q", "-I", "dtb", "-O", "dts"], input=blob,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode(errors="replace").splitlines()


def signed_view(blob: bytes) -> list[str]:
    """What U-Boot's documented FIT signature scheme (doc/usage/fit/signature.rst) protects,
    read with dtc: every node (by path) and every property, except those the scheme leaves
    unsigned — the FDT header and memory reservations, the properties of the unlisted container
    nodes /images and /configurations (`default`), and the properties of the signature node
    itself (its `value` cannot sign itself; `timestamp`, `signer-*`, ... are informational).
    Image data appears here too (as `data`): it is covered through the signed hash nodes."""
    out, path = [], []
    for line in _dts_lines(blob):
        s = line.strip()
        if not s or s.startswith(("/dts-v1/", "/memreserve/")):
            continue
        if s.endswith("{"):
            path.append(s[:-1].strip())
            out.append("node " + "/".join(path))
        elif s == "};":
            path.pop()
        elif path[1:] in (["images"], ["configurations"]) or (
                len(path) == 4 and path[1] == "configurations"
                and path[3].startswith("signature")):
            continue
        else:
            out.append("/".join(path) + ": " + s)
    return out


@pytest.fixture(scope="module")
def signed_fit(real):
    """The signed FIT, its signed view, the message its signature covers, and the byte
    positions outside the image payloads (header, tree structure, strings, free space)."""
    blob = real["fit_signed"]
    payloads = []
    for data in real["fit_signed_payloads"]:
        at = blob.find(data)
        assert at > 0 and blob.find(data, at + 1) < 0
        payloads.append((at, at + len(data)))
    meta = [i for i in range(len(blob)) if not any(a <= i < b for a, b in payloads)]
    sig = fdt.parse(blob).children["configurations"].children["conf-1"].children["signature-1"]
    hashed = sig.strings("hashed-nodes")
    strings_size = struct.unpack(">II", sig.props["hashed-strings"])[1]
    return Inputs(blob=blob, view=signed_view(blob), meta=meta, hashed=hashed,
                strings_size=strings_size,
                message=fit_sig.signed_bytes(blob, hashed, strings_size))


def _message(blob: bytes, f) -> bytes | None:
    try:
        return fit_sig.signed_bytes(blob, f["hashed"], f["strings_size"])
    except (SeedfwError, struct.error):
        return None


def check_one_byte_fit(real, f, pos: int, mask: int) -> bool:
    """Change one byte; if the verifier says ok, the change must have left every signed thing
    as it was — by the verifier's own notion (the signed message, byte for byte) and by an
    independent one (dtc's view of everything the scheme signs, see signed_view)."""
    b = bytearray(f["blob"])
    b[pos] ^= mask
    ok = _verdict(bytes(b), real["pubkey"])
    _event("verified ok (unsigned byte)" if ok else "rejected")
    if ok:
        assert _message(bytes(b), f) == f["message"], f"byte {pos:#x} ^ {mask:#x}"
        if pos >= 40:
            view = signed_view(bytes(b))
        else:
            # The 40-byte FDT header is not signed; the verifier only uses it to find the
            # blocks. A header edit dtc refuses (e.g. a version it does not know) is judged
            # with the original header put back: the tree itself must be the same.
            try:
                view = signed_view(bytes(b))
            except AssertionError:
                view = signed_view(f["blob"][:40] + bytes(b[40:]))
        assert view == f["view"], f"byte {pos:#x} ^ {mask:#x} changed a signed value"
    return ok


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(where=st.data(), mask=st.integers(1, 255))
def test_signed_fit_one_byte_never_verifies(real, signed_fit, where, mask):
    """One byte changed anywhere (half of the cases outside the image payloads, where the
    structure, hashes, signature and unsigned fields are): never ok unless nothing signed moved."""
    n = len(signed_fit["blob"])
    pos = where.draw(st.one_of(st.integers(0, n - 1), st.sampled_from(signed_fit["meta"])))
    check_one_byte_fit(real, signed_fit, pos, mask)


def test_signed_fit_property_controls(real, signed_fit):
    """Both branches of the property are reachable, and its 'unchanged' check has teeth."""
    blob = signed_fit["blob"]
    # A signed value (the payload's load address, 0x60000000) and a payload byte: rejected.
    load_prop = blob.find(struct.pack(">I", 0x60000000))
    assert load_prop > 0
    assert not check_one_byte_fit(real, signed_fit, load_prop + 3, 0x10)
    payload = blob.find(real["fit_signed_payloads"][0])
    assert not check_one_byte_fit(real, signed_fit, payload + 100, 0x01)
    # The signature's own `signer-name` value is not signed: still ok, and the check agrees.
    signer = blob.find(b"mkimage\0")
    assert signer > 0 and check_one_byte_fit(real, signed_fit, signer, 0x20)
    # Free space after the strings block: ok.
    off_strings, size_strings = struct.unpack_from(">I", blob, 12)[0], \
        struct.unpack_from(">I", blob, 32)[0]
    if off_strings + size_strings < len(blob):
        assert check_one_byte_fit(real, signed_fit, len(blob) - 1, 0xFF)
    # The independent view does see a change to a signed value (here: the load address).
    b = bytearray(blob)
    b[load_prop + 3] ^= 0x10
    assert signed_view(bytes(b)) != signed_fit["view"]


# --------------------------------------------------------------------------- container round trip

@st.composite
def container_inputs(draw):
    """Data of several kinds: random bytes, runs of repeated patterns, and slices of real AArch64
    code (set up from the fixture in the test); sizes across zero, one and many blocks."""
    kind = draw(st.sampled_from(["binary", "random", "pattern", "code", "code"]))
    if kind == "binary":
        spec = ("bytes", draw(st.binary(max_size=3000)))
    elif kind == "random":                    # incompressible, up to several blocks
        spec = ("bytes", random.Random(draw(st.integers(0, 1 << 32))).randbytes(
            draw(st.integers(0, 40000))))
    elif kind == "pattern":
        parts = draw(st.lists(st.tuples(st.binary(min_size=1, max_size=12), st.integers(1, 700)),
                              max_size=8))
        spec = ("bytes", b"".join(p * k for p, k in parts)[:20000])
    else:
        spec = ("code", (draw(st.integers(0, 1 << 16)), draw(st.integers(0, 14000))))
    block_size = 1 << draw(st.integers(10, 14))
    level = draw(st.sampled_from([0, 1, 4, 9, 12]))
    dictionary = draw(st.sampled_from(["none", "none", "rodata", "random"]))
    dict_random = draw(st.binary(min_size=1, max_size=3000)) if dictionary == "random" else b""
    return spec, block_size, level, dictionary, dict_random


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=container_inputs())
def test_container_round_trip(real, case):
    (kind, arg), block_size, level, dict_kind, dict_random = case
    if kind == "code":
        start, length = arg
        text = real["text"]
        start %= max(1, len(text))
        data = (text[start:] + text)[:length]
    else:
        data = arg
    dictionary = {"none": b"", "rodata": real["rodata"][:2048], "random": dict_random}[dict_kind]
    first = container.write_container(data, block_size, level, dictionary)
    info = container.parse_container(first)
    assert (info.original_size, info.block_size, info.dict_size, info.total_size) == \
        (len(data), block_size, len(dictionary), len(first))
    assert info.block_count == -(-len(data) // block_size)
    back = container.read_container(first, dictionary or None)
    assert back == data
    # The level is not recorded in the container: writing what was read with the same
    # parameters gives the very same bytes.
    assert container.write_container(back, info.block_size, level, dictionary) == first
    _event(f"{'many' if info.block_count > 1 else info.block_count} blocks, "
           f"{'some' if info.stored_blocks else 'none'} stored raw")
    if dictionary:
        with pytest.raises(SeedfwError):        # the dictionary is part of the format
            container.read_container(first, None)


# --------------------------------------------------------------------------- package one byte

PKG_H = "seedfw/pkg.h"


@pytest.fixture(scope="module")
def pkg_layout():
    """Field offsets from the C header (the one definition); a field's width is the distance to
    the next field declared after it."""
    lay = c_layout(PKG_H, {"seedfw_pkg_header": ["header_size", "entry_size", "entry_count",
                                                 "total_size"],
                           "seedfw_pkg_entry": ["offset", "size", "uncompressed_size"]})
    h, e = lay["seedfw_pkg_header"], lay["seedfw_pkg_entry"]
    return {"header_size": (h["header_size"], h["entry_size"] - h["header_size"]),
            "entry_size": (h["entry_size"], h["entry_count"] - h["entry_size"]),
            "entry_count": (h["entry_count"], h["total_size"] - h["entry_count"]),
            "offset": (e["offset"], e["size"] - e["offset"]),
            "size": (e["size"], e["uncompressed_size"] - e["size"])}


def hashed_ranges(blob: bytes, lay) -> list[tuple[int, int]]:
    """[start, end) of every byte a verifier hashes: header + entry table (header_crc) and each
    entry's stored data (sha256 + crc32), read from the unmutated package's own table."""
    def field(at, name):
        off, width = lay[name]
        return int.from_bytes(blob[at + off:at + off + width], "little")
    hsize, esize, count = (field(0, k) for k in ("header_size", "entry_size", "entry_count"))
    ranges = [(0, hsize + esize * count)]
    for i in range(count):
        at = hsize + i * esize
        ranges.append((field(at, "offset"), field(at, "offset") + field(at, "size")))
    return ranges


@pytest.fixture(scope="module")
def pkg_c(tmp_path_factory):
    """The C verifier (firmware/common, with its host harness), ASan/UBSan like
    tests/test_pkg_verify_c.py."""
    d = tmp_path_factory.mktemp("pkg-c")
    common = INCLUDE.parent / "common"
    exe = d / "pkg_verify_host"
    subprocess.run(["cc", "-std=c11", "-O1", f"-I{INCLUDE}", f"-I{common}",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-o", str(exe),
                    str(common / "host" / "pkg_verify_host.c"),
                    *(str(common / f) for f in ("sha256.c", "crc32.c", "pkg_verify.c"))],
                   check=True)
    return exe, d / "pkg.bin"


def c_verdict(pkg_c, blob: bytes) -> bool:
    exe, path = pkg_c
    path.write_bytes(blob)
    proc = subprocess.run([str(exe), "verify", str(path)], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr      # 2+ / signals: a crash or a sanitizer
    return proc.returncode == 0


@pytest.fixture(scope="module")
def pkg_case(real, pkg_layout):
    blob = real["package"]
    ranges = hashed_ranges(blob, pkg_layout)
    outside = [i for i in range(len(blob)) if not any(a <= i < b for a, b in ranges)]
    # Not vacuous: the package has unhashed padding, and its table is what package.py wrote.
    assert outside and ranges[1:] == [(e.offset, e.offset + e.size)
                                      for e in package.decode(blob).entries]
    return Case((blob, ranges, outside))


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(where=st.data(), mask=st.integers(1, 255))
def test_package_one_byte_ok_iff_outside_hashed_ranges(pkg_case, pkg_c, where, mask):
    blob, ranges, outside = pkg_case
    table_end = ranges[0][1]
    pos = where.draw(st.one_of(st.integers(0, len(blob) - 1), st.integers(0, table_end - 1),
                               st.sampled_from(outside)))
    b = bytearray(blob)
    b[pos] ^= mask
    expected = not any(a <= pos < e for a, e in ranges)
    _event("outside" if expected else "hashed")
    assert _verdict(bytes(b)) is expected, f"Python: byte {pos:#x} ^ {mask:#x}"
    assert c_verdict(pkg_c, bytes(b)) is expected, f"C: byte {pos:#x} ^ {mask:#x}"


def test_package_verdict_controls(pkg_case, pkg_c):
    """The unmutated package verifies in both; one hashed and one unhashed byte behave."""
    blob, ranges, outside = pkg_case
    assert _verdict(blob) and c_verdict(pkg_c, blob)
    b = bytearray(blob)
    b[ranges[-1][0]] ^= 1                    # first byte of the last entry's data
    assert not _verdict(bytes(b)) and not c_verdict(pkg_c, bytes(b))
    b = bytearray(blob)
    b[outside[0]] ^= 0xFF                    # padding
    assert _verdict(bytes(b)) and c_verdict(pkg_c, bytes(b))
