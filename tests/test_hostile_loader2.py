"""Hostile-input corpus, second pass (issue 28), for the maskrom loader: a UsbHead/FlashHead RKNS
header with hash type none checks nothing, so it must not read "RKNS header ok … all hashes ok"
(unchecked counts as failed); and LOADER_RECIPE naming a FIFO, a device or a huge file is one
error line, not a build blocked forever. Each case runs the CLI under tests/hostile.py's
`invoke_bounded` (RLIMIT_AS 1 GiB, a timeout) and asserts the exit code, the exact line and a
time and memory bound, as tests/test_hostile_inputs.py does.

The loader cases start from boot_merger 1.35's own output (the reference loader in the
mirror), changed the way an attacker would: the field, then the CRC recomputed, so that the
only thing wrong is the one under test. The reference itself inspects clean (negative control):
boot_merger writes hash type 1 (sha256) into both heads."""

from __future__ import annotations

import os
import re
import struct
import threading
from pathlib import Path

import pytest

import hostile
from seedfw.images import ldr_format

TIME_BOUND = 20.0
RSS_BOUND_MIB = 512
REF_NAME = "rk3588_spl_loader_v1.18.113.bin"
USBHEAD_AT, FLASHHEAD_AT = 0x1BC, 0x299BC       # the reference's entry offsets (rkdeveloptool's)
HASH_TYPE = 12                                  # offsetof(struct rkns_header, boot_flag)


def _reference() -> bytes:
    for root in (os.environ.get("SEEDFW_MIRROR_DIR"),
                 Path(__file__).resolve().parents[1].parent / "shared" / "mirror"):
        path = Path(root or "/nonexistent") / "rkbin" / "reference" / REF_NAME
        if path.is_file():
            return path.read_bytes()
    pytest.skip("boot_merger's reference loader is not in $SEEDFW_MIRROR_DIR or ../shared/mirror")


def _with_crc(blob: bytearray) -> bytes:
    blob[-4:] = struct.pack("<I", ldr_format.rk_crc32(bytes(blob[:-4])))
    return bytes(blob)


def _head(blob: bytearray, at: int, scrambled: bool, change) -> None:
    """Change the 2 KiB RKNS header at `at` in place (descrambled first when stored RC4'd)."""
    head = bytearray(ldr_format.rc4_sectors(bytes(blob[at:at + 2048])) if scrambled
                     else blob[at:at + 2048])
    assert head[:4] == b"RKNS"
    change(head)
    blob[at:at + 2048] = ldr_format.rc4_sectors(bytes(head)) if scrambled else head


def _no_hash(head: bytearray) -> None:
    struct.pack_into("<I", head, HASH_TYPE, struct.unpack_from("<I", head, HASH_TYPE)[0] & ~0xF)


def _loader(tmp, *changes) -> Path:
    blob = bytearray(_reference())
    for at, scrambled, change in changes:
        _head(blob, at, scrambled, change)
    path = tmp / "loader.bin"
    path.write_bytes(_with_crc(blob))
    return path


def _fifo_recipe(tmp) -> Path:
    fifo = tmp / "recipe.ini"
    os.mkfifo(fifo)
    return fifo


def _build_with_recipe(tmp, recipe) -> list:
    frag = tmp / "frag.conf"
    frag.write_text(f'CONFIG_LOADER_RECIPE="{recipe}"\n')
    return ["build", "--board", "rk3588", "--output", tmp / "out", "--fragment", frag]


# ---- cases: (args, exit code, exact error line or None, check of stdout or None) -------------

def case_reference_inspects_clean(tmp):
    path = tmp / REF_NAME
    path.write_bytes(_reference())
    return (["inspect", path], 0, None,
            lambda out: re.search(r"all hashes ok: \d+ bytes verified by a hash or signature$",
                                  out.rstrip()) is not None and "unchecked" not in out)


def case_usbhead_hash_type_none(tmp):
    f = _loader(tmp, (USBHEAD_AT, False, _no_hash))
    return (["inspect", f], 1, f"error: {f}: 1 entries failed verification: UsbHead (unchecked)",
            lambda out: "RKNS header unchecked (hash type none); rk3588_ddr_lp4_2112M 148 "
                        "sectors unchecked, rk3588_usbplug_v1 180 sectors unchecked" in out
            and "1 entries FAILED (1 unchecked)" in out and "all hashes ok" not in out)


def case_flashhead_hash_type_none(tmp):
    f = _loader(tmp, (FLASHHEAD_AT, True, _no_hash))
    return (["inspect", f], 1, f"error: {f}: 1 entries failed verification: FlashHead "
            "(unchecked)", lambda out: "unchecked  FlashHead" in out
            or "│ unchecked │" in out)


def case_both_heads_none_and_digests_zeroed(tmp):
    """What a forger does: no hash type, no digests — nothing left that a reader could check."""
    def strip(head):
        _no_hash(head)
        for i in range(4):                               # each image's sha256 (struct rkns_image)
            at = 0x78 + i * 88 + 24
            head[at:at + 64] = bytes(64)
        head[0x600:0x620] = bytes(32)                    # the header's own sha256
    f = _loader(tmp, (USBHEAD_AT, False, strip), (FLASHHEAD_AT, True, strip))
    return (["inspect", f], 1, f"error: {f}: 2 entries failed verification: UsbHead "
            "(unchecked), FlashHead (unchecked)", lambda out: "2 entries FAILED (2 unchecked)"
            in out)


def case_hash_type_none_and_a_wrong_size_is_bad(tmp):
    """Unchecked and wrong: the row says BAD (a mismatch outranks "unchecked")."""
    def shrink(head):
        _no_hash(head)
        (word,) = struct.unpack_from("<I", head, 0x78)
        struct.pack_into("<I", head, 0x78, word - (1 << 16))     # one sector fewer
    f = _loader(tmp, (USBHEAD_AT, False, shrink))
    return (["inspect", f], 1, f"error: {f}: 1 entries failed verification: UsbHead",
            lambda out: "rk3588_ddr_lp4_2112M 147 sectors BAD" in out)


def case_recipe_fifo(tmp):
    fifo = _fifo_recipe(tmp)
    return (_build_with_recipe(tmp, fifo), 1,
            f"error: {tmp}/out/.config: CONFIG_LOADER_RECIPE: loader recipe {fifo}: is a FIFO, "
            "not a regular file: refused", None)


def case_recipe_character_device(tmp):
    return (_build_with_recipe(tmp, "/dev/zero"), 1,
            f"error: {tmp}/out/.config: CONFIG_LOADER_RECIPE: loader recipe /dev/zero: is a "
            "character device, not a regular file: refused", None)


def case_recipe_directory(tmp):
    return (_build_with_recipe(tmp, tmp), 1,
            f"error: {tmp}/out/.config: CONFIG_LOADER_RECIPE: loader recipe {tmp}: is a "
            "directory, not a file", None)


def case_recipe_huge(tmp):
    big = tmp / "big.ini"
    with open(big, "wb") as f:
        f.truncate(3 << 30)                   # sparse: 3 GiB that cost nothing to make
    return (_build_with_recipe(tmp, big), 1,
            f"error: {big}: larger than 64 KiB: not a loader recipe", None)


def case_recipe_not_utf8(tmp):
    bad = tmp / "bad.ini"
    bad.write_bytes(b"[CHIP_NAME]\nNAME=RK3588\n\xff\n")
    return (_build_with_recipe(tmp, bad), 1,
            f"error: {bad}:3: not UTF-8 text (byte 0xff)", None)


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_loader(name, tmp_path):
    hostile.check_case(*CASES[name](tmp_path), time_bound=TIME_BOUND, rss_bound_mib=RSS_BOUND_MIB)


def test_read_recipe_refuses_a_fifo_without_blocking(tmp_path):
    """The reader itself (whoever calls it, whatever passed the name before): a FIFO swapped in
    for the recipe is refused at once; nothing opens it for a blocking read."""
    from seedfw.errors import SeedfwError
    from seedfw.images.loader import read_recipe

    fifo = _fifo_recipe(tmp_path)
    outcome = []

    def call():
        try:
            read_recipe(fifo)
        except SeedfwError as exc:
            outcome.append(exc.line())

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():                     # unblock the reader so the test run can end
        with open(fifo, "wb"):
            pass
        pytest.fail("read_recipe blocked on a FIFO")
    assert outcome == [f"{fifo}: is a FIFO, not a regular file: refused"]
