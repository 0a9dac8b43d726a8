"""The maskrom loader: what rkbin's boot_merger 1.35 writes, byte for byte (its own output for the
pinned recipe is in the shared mirror, never in the project), what each recipe key does, layouts
against the C headers, the recipe's errors, and `invoke inspect` of good, damaged and hostile files.

Independent checks: the CRC, RC4 and RKNS digests are recomputed here with code of this file
(bitwise CRC, textbook RC4), not the writer's."""

from __future__ import annotations

import calendar
import hashlib
import json
import os
import shutil
import struct
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

import builds
from c_layout import _compile_and_run, c_layout, c_macros
from cli import invoke, one_error_line
from seedfw.errors import SeedfwError
from seedfw.images import ldr_format as fmt
from seedfw.images import boot_inspect, loader
from seedfw.sources import rkbin

REPO = Path(__file__).resolve().parents[1]
REF_NAME = "rk3588_spl_loader_v1.18.113.bin"
EPOCH = 1700000000                                   # 2023-11-14 22:13:20 UTC


def _mirror() -> Path | None:
    for root in (os.environ.get("SEEDFW_MIRROR_DIR"), REPO.parent / "shared" / "mirror"):
        if root and (Path(root) / "rkbin" / "reference" / REF_NAME).is_file():
            return Path(root) / "rkbin"
    return None


@pytest.fixture(scope="module")
def reference() -> bytes:
    m = _mirror()
    if m is None:
        pytest.skip("boot_merger's reference loader is not in $SEEDFW_MIRROR_DIR or "
                    "../shared/mirror (rkbin/reference/" + REF_NAME + ")")
    return (m / "reference" / REF_NAME).read_bytes()


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    try:
        return rkbin.fetch(progress=lambda m: None)
    except SeedfwError as exc:
        pytest.skip(f"pinned rkbin files unavailable: {exc.line()}")


@pytest.fixture(scope="module")
def ini_text(files) -> str:
    return files[rkbin.INI.name].read_text()


def make(files, text: str, tmp_path: Path, release: int = EPOCH) -> bytes:
    recipe = tmp_path / "recipe.ini"
    recipe.write_text(text)
    return loader.build_loader(recipe, files, release)[0]


def pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % 2048)


def rc4(data: bytes) -> bytes:
    """Textbook RC4 with Rockchip's public key (the one in ldr.h / U-Boot's rkcommon.c)."""
    key = bytes.fromhex("7c4e0304550509072d2c7b38170d1711")
    s, j = list(range(256)), 0
    for i in range(256):
        j = (j + s[i] + key[i % 16]) % 256
        s[i], s[j] = s[j], s[i]
    out, i, j = bytearray(), 0, 0
    for c in data:
        i = (i + 1) % 256
        j = (j + s[i]) % 256
        s[i], s[j] = s[j], s[i]
        out.append(c ^ s[(s[i] + s[j]) % 256])
    return bytes(out)


def _crc_bit(crc: int, byte: int) -> int:
    crc ^= byte << 24
    for _ in range(8):
        crc = ((crc << 1) ^ 0x04C10DB7) & 0xFFFFFFFF if crc & 0x80000000 else (crc << 1) & 0xFFFFFFFF
    return crc


_BIT_TABLE = [_crc_bit(0, b) for b in range(256)]       # bit loop per byte value, cached


def crc_bitwise(data: bytes) -> int:
    """Rockchip's CRC32 by its definition: polynomial 0x04c10db7, MSB first, init 0, no xor
    (one step of 8 bits per byte, each byte's 8 steps from the bit loop above)."""
    crc = 0
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _BIT_TABLE[(crc >> 24) ^ b]
    return crc


def test_crc_shortcut_is_the_bit_loop():
    import random
    data = random.Random(1).randbytes(3000)
    crc = 0
    for b in data:
        crc = _crc_bit(crc, b)
    assert crc_bitwise(data) == crc


def entries(blob: bytes) -> list[tuple]:
    """(type, name, offset, size, delay) of every entry, read with this file's own offsets."""
    out = []
    for count_at in (0x19, 0x1f, 0x25):
        count, table = blob[count_at], struct.unpack_from("<I", blob, count_at + 1)[0]
        for i in range(count):
            _, t, name, off, size, delay = struct.unpack_from("<BI40sIII", blob, table + 57 * i)
            out.append((t, name.decode("utf-16-le").rstrip("\0"), off, size, delay))
    return out


# ---- layouts -------------------------------------------------------------------------------------

HEADER_FIELDS = ["tag", "size", "version", "merger_version", "release", "chip_type",
                 "code471_num", "code471_offset", "code471_size", "code472_num", "code472_offset",
                 "code472_size", "loader_num", "loader_offset", "loader_size", "sign_flag",
                 "rc4_flag", "rc4_471_off", "reserved"]
ENTRY_FIELDS = ["size", "type", "name", "data_offset", "data_size", "data_delay"]


def _offsets(fmt_text: str) -> list[int]:
    """Byte offset of each field of a packed struct format ("<" + one code per field)."""
    parts, i, codes = [], 0, fmt_text[1:].replace(" ", "")
    while i < len(codes):                       # split "40s" / "56s" / single codes
        j = i
        while codes[j].isdigit():
            j += 1
        parts.append(codes[i:j + 1])
        i = j + 1
    return [struct.calcsize("<" + "".join(parts[:n])) for n in range(len(parts))]


def test_layout_matches_c_headers():
    lay = c_layout("seedfw/ldr.h", {"ldr_header": HEADER_FIELDS, "ldr_entry": ENTRY_FIELDS})
    h, e = lay["ldr_header"], lay["ldr_entry"]
    assert h["sizeof"] == fmt.HEADER.size == 102 and e["sizeof"] == fmt.ENTRY.size == 57
    py = _offsets(fmt.HEADER.format)
    py = py[:4] + [py[4]] + py[10:]            # the 7-byte time is 6 fields in Python
    assert [h[f] for f in HEADER_FIELDS] == py
    assert [e[f] for f in ENTRY_FIELDS] == _offsets(fmt.ENTRY.format)
    m = c_macros("seedfw/ldr.h", ["LDR_TAG", "LDR_TAG_OLD", "LDR_DATA_ALIGN", "LDR_ENTRY_471",
                                   "LDR_ENTRY_472", "LDR_ENTRY_LOADER", "LDR_NAME_CHARS",
                                   "LDR_RC4_SECTOR", "LDR_MERGE_VERSION"])
    assert (m["LDR_TAG"].to_bytes(4, "little"), m["LDR_TAG_OLD"].to_bytes(4, "little")) == \
        (fmt.TAG, fmt.TAG_OLD) == (b"LDR ", b"BOOT")
    assert (m["LDR_DATA_ALIGN"], m["LDR_ENTRY_471"], m["LDR_ENTRY_472"], m["LDR_ENTRY_LOADER"],
            m["LDR_NAME_CHARS"], m["LDR_RC4_SECTOR"], m["LDR_MERGE_VERSION"]) == \
        (fmt.DATA_ALIGN, fmt.ENTRY_471, fmt.ENTRY_472, fmt.ENTRY_LOADER, fmt.NAME_CHARS,
         fmt.RC4_SECTOR, fmt.MERGE_VERSION)
    key = _compile_and_run('#include <stdio.h>\n#include "seedfw/ldr.h"\nint main(void) {'
                           'static const unsigned char k[] = LDR_RC4_KEY;'
                           'for (unsigned i = 0; i < sizeof k; i++) printf("%02x", k[i]);'
                           'return 0; }')
    assert bytes.fromhex(key) == fmt.RC4_KEY


def test_rkns_layout_matches_c_header():
    lay = c_layout("seedfw/rkns.h", {"rkns_header": ["size_and_nimage", "boot1_param", "images",
                                                     "hash"],
                                     "rkns_image": ["size_and_off", "counter", "hash"]})
    h, i = lay["rkns_header"], lay["rkns_image"]
    assert (h["sizeof"], h["boot1_param"], h["images"], i["sizeof"]) == \
        (fmt.RKNS_SIZE, fmt.RKNS_BOOT1_AT, fmt.RKNS_IMAGES_AT, fmt.RKNS_IMAGE.size)
    assert (i["counter"], i["hash"]) == tuple(_offsets(fmt.RKNS_IMAGE.format)[k] for k in (3, 5))
    m = c_macros("seedfw/rkns.h", ["RKNS_BOOT1_WORDS", "RKNS_HASH_WORDS", "RKNS_MAX_IMAGES"])
    assert (m["RKNS_BOOT1_WORDS"], m["RKNS_HASH_WORDS"], m["RKNS_MAX_IMAGES"]) == \
        (fmt.RKNS_BOOT1_WORDS, fmt.RKNS_HASH_WORDS, fmt.RKNS_MAX_IMAGES)
    assert m["RKNS_HASH_WORDS"] * 4 == h["hash"]


# ---- the default recipe against boot_merger's own output --------------------------------------

def test_default_recipe_is_boot_mergers_output(files, ini_text, tmp_path, reference):
    ours = make(files, ini_text, tmp_path)
    assert len(ours) == len(reference) == 487_872
    differ = [i for i in range(len(ours)) if ours[i] != reference[i]]
    assert differ and set(differ) <= set(range(0x0e, 0x15)) | set(range(len(ours) - 4, len(ours)))
    assert struct.unpack_from("<H5B", ours, 0x0e) == (2023, 11, 14, 22, 13, 20)  # SOURCE_DATE_EPOCH
    # with boot_merger's release time (it writes the wall clock) not a byte differs, CRC included
    y, mo, d, h, mi, s = struct.unpack_from("<H5B", reference, 0x0e)
    assert make(files, ini_text, tmp_path, calendar.timegm((y, mo, d, h, mi, s))) == reference


def test_crc_is_rockchips(files, ini_text, tmp_path, reference):
    ours = make(files, ini_text, tmp_path)
    for blob in (ours, reference):             # the reference's CRC was made by boot_merger
        assert struct.unpack("<I", blob[-4:])[0] == crc_bitwise(blob[:-4])


def test_default_recipe_contents(files, ini_text, tmp_path):
    """What the reference holds, spelled out: every field from the blobs and the recipe."""
    blob = make(files, ini_text, tmp_path)
    ddr, plug, spl = (files[p.name].read_bytes() for p in (rkbin.DDR, rkbin.USBPLUG, rkbin.SPL))
    assert blob[:4] == b"LDR " and struct.unpack_from("<HII", blob, 4) == (102, 0x010b, 0x01000000)
    assert blob[0x15:0x19] == b"8853" and blob[0x2b:0x2e] == b"\0\1\1"   # sign 0, RC4 off twice
    assert entries(blob) == [
        (1, "UsbHead", 0x1bc, 2048, 1), (1, "rk3588_ddr_lp4_2112M", 0x9bc, 75776, 1),
        (2, "rk3588_usbplug_v1", 0x131bc, 92160, 0), (4, "FlashHead", 0x299bc, 2048, 0),
        (4, "FlashData", 0x2a1bc, 75776, 0), (4, "FlashBoot", 0x3c9bc, 239616, 0)]
    data = {name: blob[off:off + size] for _, name, off, size, _ in entries(blob)}
    assert data["rk3588_ddr_lp4_2112M"] == pad(ddr) and data["rk3588_usbplug_v1"] == pad(plug)
    sectors = lambda d: b"".join(rc4(d[i:i + 512]) for i in range(0, len(d), 512))  # noqa: E731
    assert sectors(data["FlashData"]) == pad(ddr) and sectors(data["FlashBoot"]) == pad(spl)
    for head, images in ((data["UsbHead"], [ddr, plug]), (sectors(data["FlashHead"]), [ddr, spl])):
        assert head[:4] == b"RKNS" and struct.unpack_from("<II", head, 8) == (0x00020180, 1)
        at = 4
        for n, img in enumerate(images):
            size_off, addr, flag, counter = struct.unpack_from("<IIII", head, 0x78 + 88 * n)
            assert (size_off & 0xFFFF, size_off >> 16, addr, flag, counter) == \
                (at, len(pad(img)) // 512, 0xFFFFFFFF, 0, n + 1)
            assert head[0x78 + 88 * n + 24:][:32] == hashlib.sha256(pad(img)).digest()
            at += len(pad(img)) // 512
        assert head[0x600:0x620] == hashlib.sha256(head[:0x600]).digest()


# ---- one test per key ----------------------------------------------------------------------------

def test_newidb_false(files, ini_text, tmp_path):
    blob = make(files, ini_text.replace("NEWIDB=true", "NEWIDB=false"), tmp_path)
    assert len(blob) == 483_662 and blob[:4] == b"BOOT"
    assert [e[:2] for e in entries(blob)] == [(1, "rk3588_ddr_lp4_2112M"), (2, "rk3588_usbplug_v1"),
                                             (4, "FlashData"), (4, "FlashBoot")]
    assert entries(blob)[0][2] == 0x66 + 4 * 57        # data right after the four entries
    assert b"RKNS" not in blob and struct.unpack("<I", blob[-4:])[0] == crc_bitwise(blob[:-4])
    back = loader.decode(blob)                         # inspect reads BOOT-tagged loaders too
    assert boot_inspect.recognises(blob) and not back.newidb and not loader.check_heads(back)


def test_471_rc4_on_scrambles_code471_and_472(files, ini_text, tmp_path):
    blob = make(files, ini_text.replace("471_RC4_OFF=true", "471_RC4_OFF=false"), tmp_path)
    assert blob[0x2c:0x2e] == b"\1\0"                  # RC4_OFF still true; 471/472 flag 0
    data = {name: blob[off:off + size] for _, name, off, size, _ in entries(blob)}
    ddr, plug = files[rkbin.DDR.name].read_bytes(), files[rkbin.USBPLUG.name].read_bytes()
    assert data["rk3588_ddr_lp4_2112M"] != pad(ddr)   # scrambled: one RC4 stream per entry
    assert rc4(data["rk3588_ddr_lp4_2112M"]) == pad(ddr) and rc4(data["rk3588_usbplug_v1"]) == pad(plug)
    assert rc4(data["UsbHead"])[:4] == b"RKNS"


def test_rc4_off_false_clears_the_header_flag(files, ini_text, tmp_path):
    plain = make(files, ini_text, tmp_path)
    blob = make(files, ini_text.replace("\nRC4_OFF=true", "\nRC4_OFF=false"), tmp_path)
    assert blob[0x2c:0x2e] == b"\0\1"
    assert [i for i in range(len(blob)) if blob[i] != plain[i]][:1] == [0x2c]   # data unchanged
    both = make(files, ini_text.replace("RC4_OFF=true", "RC4_OFF=false"), tmp_path)
    assert both[0x2c:0x2e] == b"\0\0" and loader.decode(both).rc4_off is False


def test_minor_gives_the_version(files, ini_text, tmp_path):
    blob = make(files, ini_text.replace("MINOR=11", "MINOR=20"), tmp_path)
    assert struct.unpack_from("<I", blob, 6)[0] == (1 << 8) | 20 and loader.decode(blob).version == (1, 20)


def test_boot1_param_words_go_into_both_rkns_headers(files, ini_text, tmp_path):
    blob = make(files, ini_text.replace("WORD_3=0x0", "WORD_3=0x12345678"), tmp_path)
    back = loader.decode(blob)
    heads = [e.data for e in back.entries if e.name in ("UsbHead", "FlashHead")]
    assert [struct.unpack_from("<8I", h, 0x58)[3] for h in heads] == [0x12345678] * 2
    assert all(h.ok for h in loader.check_heads(back).values())


TWO_471 = [("NUM=1\nPath1=bin/rk35/rk3588_ddr_lp4_2112MHz_lp5_2400MHz_v1.18.bin\nSleep=1",
            "NUM=2\nPath1=bin/rk35/rk3588_ddr_lp4_2112MHz_lp5_2400MHz_v1.18.bin\n"
            "Path2=bin/rk35/rk3588_usbplug_v1.11.bin\nSleep=3"),
           ("NUM=1\nPath1=bin/rk35/rk3588_usbplug_v1.11.bin", "NUM=1\nPath1=bin/rk35/"
            "rk3588_spl_v1.13.bin\nSleep=5")]
VARIANTS = {
    "default": [], "newidb-false": [("NEWIDB=true", "NEWIDB=false")],
    "471-rc4-on": [("471_RC4_OFF=true", "471_RC4_OFF=false")],
    "rc4-on": [("\nRC4_OFF=true", "\nRC4_OFF=false")],
    "all-rc4-on-no-idb": [("RC4_OFF=true", "RC4_OFF=false"), ("NEWIDB=true", "NEWIDB=false")],
    "minor-20": [("MINOR=11", "MINOR=20")], "boot1": [("WORD_5=0x0", "WORD_5=0xdeadbeef")],
    "two-471-sleeps": TWO_471,
    "no-system-no-flag": [("[SYSTEM]\nNEWIDB=true\n[FLAG]\n471_RC4_OFF=true\nRC4_OFF=true\n", "")],
}


@pytest.mark.skipif(not os.environ.get("SEEDFW_BOOT_MERGER"),
                    reason="SEEDFW_BOOT_MERGER (rkbin's tools/boot_merger, x86-64) not set")
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_same_bytes_as_boot_merger_itself(files, ini_text, tmp_path, variant):
    """Each key against the tool itself: boot_merger packs the variant recipe in a scratch rkbin
    tree; ours, given boot_merger's release time, must not differ in a single byte."""
    text = ini_text
    for old, new in VARIANTS[variant]:
        assert old in text
        text = text.replace(old, new)
    text = text.replace(f"PATH={REF_NAME}", "PATH=theirs.bin")
    tree = tmp_path / "bin" / "rk35"
    tree.mkdir(parents=True)
    for pin in rkbin.BLOBS:
        shutil.copy(files[pin.name], tree / pin.name)
    (tmp_path / "recipe.ini").write_text(text)
    subprocess.run([os.environ["SEEDFW_BOOT_MERGER"], "recipe.ini"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=60, env={**os.environ, "TZ": "UTC0"})
    theirs = (tmp_path / "theirs.bin").read_bytes()
    when = calendar.timegm(struct.unpack_from("<H5B", theirs, 0x0e))
    (tmp_path / "ours").mkdir()
    assert make(files, text, tmp_path / "ours", when) == theirs


# ---- recipe errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("old, new, mark, message", [
    ("RC4_OFF=true\n[BOOT1", "RC4_OFF=true\nSECURE=1\n[BOOT1", "SECURE", "unknown key SECURE in [FLAG]"),
    ("[OUTPUT]", "[EXTRA]\n[OUTPUT]", "[EXTRA]", "unknown section [EXTRA] (known: "),
    ("NEWIDB=true", "NEWIDB=yes", "NEWIDB", "NEWIDB=yes: must be true or false"),
    ("MINOR=11", "MINOR=300", "MINOR", "MINOR=300: must be 0 to 255"),
    ("LOADER2=FlashBoot", "LOADER2=FlashBoot\nLOADER3=Extra", "LOADER3", "LOADER3 but NUM=2"),
    ("FlashBoot=bin", "FlashBot=bin", "FlashBot", "unknown key FlashBot in [LOADER_OPTION]"),
    ("MAJOR=1", "MAJOR=1\nMAJOR=2", "MAJOR=2", "MAJOR appears twice in [VERSION]"),
    ("[VERSION]", "VERSION", "VERSION", "'VERSION' is neither [SECTION] nor KEY=VALUE"),
])
def test_recipe_error_names_file_and_line(files, ini_text, tmp_path, old, new, mark, message):
    text = ini_text.replace(old, new, 1)
    line = 1 + text[:text.index(mark)].count("\n")
    with pytest.raises(SeedfwError) as err:
        make(files, text, tmp_path)
    assert err.value.file == str(tmp_path / "recipe.ini") and err.value.field == f"line {line}"
    assert err.value.message.startswith(message), err.value.message


def test_unpinned_blob_is_refused(files, ini_text, tmp_path):
    text = ini_text.replace("rk3588_spl_v1.13.bin", "rk3588_spl_v1.12.bin")
    line = 1 + text[:text.index("rk3588_spl_v1.12")].count("\n")
    with pytest.raises(SeedfwError, match=f"recipe.ini:{line}: bin/rk35/rk3588_spl_v1.12.bin is "
                                          "not a pinned blob"):
        make(files, text, tmp_path)
    # a copy under the pinned name with other bytes is refused too
    bad = tmp_path / rkbin.SPL.name
    raw = files[rkbin.SPL.name].read_bytes()
    bad.write_bytes(bytes([raw[0] ^ 0xFF]) + raw[1:])
    with pytest.raises(SeedfwError, match="sha256 [0-9a-f]{64} is not the pinned " + rkbin.SPL.sha256):
        make({**files, rkbin.SPL.name: bad}, ini_text, tmp_path)


def test_recipe_is_a_kconfig_option(files, ini_text, tmp_path):
    from seedfw.parts import loader as loader_part
    ctx = SimpleNamespace(values={"UBOOT": True, "LOADER_RECIPE": "RK3588MINIALL.ini"},
                          outdir=tmp_path, capable=lambda c: c == "maskrom")
    part = loader_part.LoaderPart()
    assert part.enabled(ctx) and loader_part.local_recipe(ctx) is None
    assert loader_part.output_name(ctx) == REF_NAME
    own = tmp_path / "mine.ini"
    own.write_text(ini_text.replace("PATH=rk3588_spl_loader_v1.18.113.bin", "PATH=mine.bin"))
    ctx.values["LOADER_RECIPE"] = str(own)
    assert loader_part.local_recipe(ctx) == own and loader_part.output_name(ctx) == "mine.bin"
    ctx.values["LOADER_RECIPE"] = "nosuch.ini"
    with pytest.raises(SeedfwError, match="CONFIG_LOADER_RECIPE: loader recipe nosuch.ini is "
                                          "neither the pinned RK3588MINIALL.ini nor an existing file"):
        loader_part.local_recipe(ctx)
    assert not part.enabled(SimpleNamespace(values={"UBOOT": True, "LOADER_RECIPE": ""},
                                            capable=lambda c: True))
    # negative control: a recipe on a board whose boot ROM takes no loader over USB
    assert not part.enabled(SimpleNamespace(values={"UBOOT": True, "LOADER_RECIPE": "x.ini"},
                                            capable=lambda c: False))


# ---- inspect and hostile input -------------------------------------------------------------------

@pytest.fixture(scope="module")
def built(files, ini_text, tmp_path_factory):
    d = tmp_path_factory.mktemp("ldr")
    path = d / REF_NAME
    path.write_bytes(make(files, ini_text, d))
    return path


def test_inspect_checks_against_the_pinned_blobs(built):
    proc = invoke("inspect", "--json", built)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["rows"]}
    assert [(n, r["size"], r["hash_ok"]) for n, r in rows.items()] == [
        ("header + CRC32", 487_872, True), ("UsbHead", 2048, True),
        ("rk3588_ddr_lp4_2112M", 75776, True), ("rk3588_usbplug_v1", 92160, True),
        ("FlashHead", 2048, True), ("FlashData", 75776, True), ("FlashBoot", 239616, True)]
    assert rows["FlashBoot"]["detail"] == f"rc4 at 0x3c9bc, delay 0 ms, = pinned {rkbin.SPL.name}"
    assert rows["FlashHead"]["detail"] == ("rc4 at 0x299bc: RKNS header ok; FlashData 148 sectors "
                                           "ok, FlashBoot 468 sectors ok")
    assert "2023-11-14 22:13:20 UTC" in rows["header + CRC32"]["detail"]


def test_inspect_names_the_damaged_entry(built, tmp_path):
    blob = bytearray(built.read_bytes())
    blob[0x3c9bc + 5000] ^= 0x01                   # inside FlashBoot (stored scrambled)
    bad = tmp_path / "bad.bin"
    bad.write_bytes(bytes(blob))
    proc = invoke("inspect", "--json", bad)
    assert proc.returncode == 1
    rows = {r["name"]: r for r in json.loads(proc.stdout)["rows"]}
    assert [n for n, r in rows.items() if not r["hash_ok"]] == ["header + CRC32", "FlashHead",
                                                               "FlashBoot"]
    assert rows["FlashHead"]["detail"].endswith("FlashData 148 sectors ok, FlashBoot 468 sectors BAD")
    assert rows["FlashBoot"]["detail"].endswith("matches no pinned blob")


@pytest.mark.parametrize("at, value, field, message", [
    (0x20, struct.pack("<I", 0x7FFFFFF0), "offset 0x1f", "entry table at 0x7ffffff0 (1 x 57 bytes) "
                                                         "does not fit the file"),
    (0x19, b"\xc8", "offset 0x19", "200 entries in one table (at most 32)"),
    (0x66 + 45, struct.pack("<I", 0x9bc), "offset 0xcc", "entry data at 0x9bc (75776 bytes) "
                                                         "overlaps the entry at 0x9bc (2048 bytes)"),
    (0x9f + 49, struct.pack("<I", 0xFFFFFF00), "offset 0xcc", "entry data at 0x9bc (4294967040 "
                                                              "bytes) is outside the file"),
    (0x10, b"\x0d", "offset 0xe", "release time 2023-13-14 22:13:20 is not a date and time"),
    (0x08, b"\x01", "offset 0x6", "version 0x0001010b is not (MAJOR << 8) | MINOR"),
    (0x6b, "\u2603".encode("utf-16-le"), "offset 0x6b", "entry name"),
])
def test_hostile_loader_is_a_clean_error(built, at, value, field, message):
    blob = bytearray(built.read_bytes())
    blob[at:at + len(value)] = value
    with pytest.raises(SeedfwError) as err:
        loader.decode(bytes(blob), "hostile.bin")
    assert err.value.line().startswith(f"hostile.bin: {field}: {message}"), err.value.line()


def test_hostile_loader_is_one_error_line_in_inspect(built, tmp_path):
    blob = bytearray(built.read_bytes())
    blob[0x10] = 0x99                             # month 153
    bad = tmp_path / "hostile.bin"
    bad.write_bytes(bytes(blob))
    assert one_error_line(invoke("inspect", bad)) == (
        f"error: {bad}: offset 0xe: release time 2023-153-14 22:13:20 is not a date and time")


def test_truncated_and_foreign_files(tmp_path):
    with pytest.raises(SeedfwError, match="truncated loader"):
        loader.decode(b"LDR " + bytes(50))
    with pytest.raises(SeedfwError, match="not a Rockchip loader"):
        loader.decode(b"ANDROID!" + bytes(200))


def test_mutated_loaders_never_crash_the_reader():
    """Property: any byte changes or truncation of a loader give a Loader or a SeedfwError, never
    another exception (seeded, so a failure reproduces)."""
    import random
    rng = random.Random(20)
    good = fmt.encode(fmt.Loader("RK3588", (1, 11), [
        fmt.LoaderEntry(fmt.ENTRY_471, "ddr", bytes(range(256)) * 9, 1),
        fmt.LoaderEntry(fmt.ENTRY_472, "plug", b"\x5a" * 3000),
        fmt.LoaderEntry(fmt.ENTRY_LOADER, "FlashData", b"\x11" * 700),
        fmt.LoaderEntry(fmt.ENTRY_LOADER, "FlashBoot", b"\x22" * 5000)], EPOCH,
        rc4_471_off=False))
    outcomes = set()
    for n in range(400):
        blob = bytearray(good)
        if n % 5 == 0:
            blob = blob[:rng.randrange(len(blob))]
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(0x140) if rng.random() < 0.8 else rng.randrange(len(good))
            if at < len(blob):
                blob[at] = rng.randrange(256)
        try:
            back = loader.decode(bytes(blob), "m.bin")
            loader.check_heads(back)
            outcomes.add("read")
        except SeedfwError as exc:
            assert exc.line().startswith("m.bin"), exc.line()
            outcomes.add("error")
    assert outcomes == {"read", "error"}


def test_local_recipe_error_stops_the_build_at_once(ini_text, tmp_path):
    recipe = tmp_path / "recipe.ini"
    recipe.write_text(ini_text.replace("\nRC4_OFF=true", "\nRC4_OFF=true\nSECURE_BOOT=1"))
    line = 1 + recipe.read_text()[:recipe.read_text().index("SECURE_BOOT")].count("\n")
    frag = tmp_path / "frag.conf"
    frag.write_text(f'CONFIG_LOADER_RECIPE="{recipe}"\n')
    proc = invoke("build", "--board", "rk3588", "--output", tmp_path / "out", "--fragment", frag)
    assert one_error_line(proc) == f"error: {recipe}:{line}: unknown key SECURE_BOOT in [FLAG]"
    assert not (tmp_path / "out" / "images").exists()


@pytest.mark.skipif(shutil.which("rkdeveloptool") is None, reason="rkdeveloptool not installed")
def test_real_rkdeveloptool_reads_it(built, tmp_path):
    """An independent reader: rkdeveloptool's own `unpack` (no device needed)."""
    out = subprocess.run(["rkdeveloptool", "unpack", str(built)], cwd=tmp_path, capture_output=True,
                         text=True, errors="replace", timeout=30).stdout
    assert "471 num:2, 472 num:1, loader num:3" in out and "entry num: 6" in out
    assert "entry: t=1, name=UsbHead, off=444, size=2048" in out
    assert "entry: t=4, name=FlashBoot, off=248252, size=239616" in out and out.rstrip().endswith("done")


@pytest.mark.slow
def test_build_writes_the_same_loader(rk3588_build, built):
    out = builds.image(rk3588_build, rkbin.LOADER_NAME)
    assert out.read_bytes() == built.read_bytes()     # same recipe, blobs and SOURCE_DATE_EPOCH
