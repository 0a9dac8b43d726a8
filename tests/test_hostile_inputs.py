"""The hostile-input corpus (issue 24, docs/hostile-input.md): files users did not make, made by
mutating small real images the library builds (seedfw.images.samples: mkimage's FIT, the boot
package, an RKNS idblock, a GPT disk) or written by hand where the point is a structure no
writer would make. Every case runs the CLI in a subprocess under RLIMIT_AS = 1 GiB and a
timeout, and asserts the exit code, the exact one error line (or, for a clean file, exit 0),
and a time and memory bound.

Classes (the issue's): verdict (no wrong "ok"), traceback (one line instead), unbounded (time
and memory), path (confinement), terminal (no raw control characters), silent (refused, not
accepted). Crash inputs the fuzz campaigns found (tests/hostile_crashes/) are replayed too.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from pathlib import Path

import pytest

import hostile
from hostile import fdt, fit, image_node, s, u32

TIME_BOUND = 20.0          # seconds per case (the bound for inspect)
RSS_BOUND_MIB = 512


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    from seedfw.images import samples as samples_mod
    return samples_mod.make_all(tmp_path_factory.mktemp("samples"))

def _gpt_fix_crcs(blob: bytearray) -> None:
    """Recompute the primary GPT's array and header CRCs (what an attacker does)."""
    count, esize = struct.unpack_from("<II", blob, 512 + 80)
    array_lba = struct.unpack_from("<Q", blob, 512 + 72)[0]
    array = blob[array_lba * 512:array_lba * 512 + count * esize]
    struct.pack_into("<I", blob, 512 + 88, zlib.crc32(array))
    struct.pack_into("<I", blob, 512 + 16, 0)
    struct.pack_into("<I", blob, 512 + 16, zlib.crc32(blob[512:512 + 92]))

def _firmware_offset(disk: Path) -> int:
    from seedfw.images import gpt
    return gpt.parse(disk.read_bytes()).partition("firmware").offset

def _pkg_with(entries_data):
    from seedfw.images import package
    from seedfw.images.entries import Entry
    return package.encode([Entry(n, d) for n, d in entries_data])

def _rknn(meta_json: bytes) -> bytes:
    head = struct.pack("<8sQQ", b"RKNN\0\0\0\0", 6, 0).ljust(64, b"\0")
    return head + struct.pack("<Q", len(meta_json)) + meta_json

def _manifest(tmp, blob_name, blob, kind="rknn", path=None) -> Path:
    (tmp / blob_name).write_bytes(blob)
    m = tmp / "models.yaml"
    m.write_text(f"models:\n  - {{name: m, path: {path or blob_name}, type: {kind}}}\n")
    return m

def _board_copy(tmp, old, new):
    from seedfw.paths import BOARD_DIR
    b = tmp / "rk3588" / "board.yaml"
    b.parent.mkdir()
    text = (BOARD_DIR / "rk3588" / "board.yaml").read_text()
    assert old in text
    b.write_text(text.replace(old, new, 1))
    return b


# Each builder: (tmp, samples) -> (args, expected returncode, expected error line or None,
# optional check of stdout). f"{f}" in the line is the file given to the command.
def case_verdict_disk_fit_magic(tmp, sm):
    f = tmp / "disk.img"
    blob = bytearray(sm["disk"].read_bytes())
    blob[_firmware_offset(sm["disk"])] ^= 0x01
    f.write_bytes(bytes(blob))
    return ["inspect", f], 1, f"error: {f}: 1 entries failed verification: firmware", None


def case_verdict_disk_fit_zeroed(tmp, sm):
    f = tmp / "disk.img"
    blob = bytearray(sm["disk"].read_bytes())
    at = _firmware_offset(sm["disk"])
    blob[at:at + sm["fit"].stat().st_size] = bytes(sm["fit"].stat().st_size)
    f.write_bytes(bytes(blob))
    return ["inspect", f], 1, f"error: {f}: 1 entries failed verification: firmware", None


def case_verdict_disk_cut_in_half(tmp, sm):
    f = tmp / "disk.img"
    blob = sm["disk"].read_bytes()
    f.write_bytes(blob[:len(blob) // 2])
    return (["inspect", f], 1, f"error: {f}: 3 entries failed verification: GPT backup header, "
            "partition 1 firmware, boot@32K/u-boot.itb", None)


def case_verdict_idblock_hash_none(tmp, sm):
    f = tmp / "idbloader.img"
    blob = bytearray(sm["idbloader"].read_bytes())
    struct.pack_into("<I", blob, 12, 0)                  # hash type "none"
    blob[4000] ^= 0xFF                                   # and the SPL corrupted
    f.write_bytes(bytes(blob))
    return (["inspect", f], 1, f"error: {f}: 3 entries failed verification: idblock header, "
            "DDR init (TPL), U-Boot SPL", None)


def case_verdict_gpt_last_lba_max(tmp, sm):
    f = tmp / "disk.img"
    blob = bytearray(sm["disk"].read_bytes())
    struct.pack_into("<Q", blob, 1024 + 40, (1 << 64) - 1)   # entry 1 last_lba
    _gpt_fix_crcs(blob)
    f.write_bytes(bytes(blob))
    return (["inspect", f], 1, f"error: {f}: partition entry 1: LBA 24576..18446744073709551615 "
            "is not inside the usable LBAs 34..", None)


def case_verdict_fit_duplicate_data(tmp, sm):
    f = tmp / "dup.itb"
    good, evil = b"good payload", b"evil payload"
    name, props, children = image_node("fw", good)
    f.write_bytes(fit([(name, props[:2] + [("data", evil)] + props[2:], children)]))
    return (["inspect", f], 1, f"error: {f}: offset 0xac: damaged FDT structure block: property "
            "'data' of '/images/fw' appears twice (U-Boot and fdtget read the first, so the "
            "copies could differ): refused", None)


def case_verdict_fit_duplicate_node(tmp, sm):
    f = tmp / "dup.itb"
    f.write_bytes(fit([image_node("fw", b"good"), image_node("fw", b"evil")]))
    return (["inspect", f], 1, f"error: {f}: offset 0x10c: damaged FDT structure block: node "
            "'/images/fw' appears twice (U-Boot and fdtget read the first, so the copies could "
            "differ): refused", None)


def case_verdict_idbloader_ok(tmp, sm):
    return ["inspect", sm["idbloader"]], 0, None, lambda out: "all hashes ok" in out


def case_traceback_markup_fit_name(tmp, sm):
    f = tmp / "markup.itb"
    f.write_bytes(fit([image_node("[/x]", b"data")]))
    return ["inspect", f], 0, None, lambda out: "[/x]" in out and "all hashes ok" in out


def case_traceback_markup_gpt_name(tmp, sm):
    from seedfw.images import samples as smod
    f = tmp / "disk.img"
    f.write_bytes(smod.gpt_disk([("firmware", 64, sm["fit"].read_bytes()),
                                 ("[/x]", 4096, b"")]))
    return ["inspect", f], 0, None, lambda out: "[/x]" in out


def case_traceback_fit_not_utf8(tmp, sm):
    f = tmp / "disk.img"
    blob = bytearray(sm["disk"].read_bytes())
    at = _firmware_offset(sm["disk"])
    itb = sm["fit"].read_bytes()
    i = itb.index(b"bl31\0")                         # an image node's name
    blob[at + i] = 0xFF
    f.write_bytes(bytes(blob))
    return (["inspect", f], 1, f"error: {f}: 1 entries failed verification: firmware", None)


def case_traceback_disk_530_bytes(tmp, sm):
    f = tmp / "disk.img"
    f.write_bytes(sm["disk"].read_bytes()[:530])
    return (["inspect", f], 1, f"error: {f}: GPT header: image: 92 bytes at offset 0x200 run past "
            "the end (530 bytes)", None)


def case_traceback_rknn_json_list(tmp, sm):
    m = _manifest(tmp, "m.rknn", _rknn(b"[1, 2]"))
    return (["models", "--manifest", m], 1, f"error: {tmp}/m.rknn: offset 0x48: trailing model "
            "JSON is a list, not an object", None)


def case_traceback_rknn_json_deep(tmp, sm):
    m = _manifest(tmp, "m.rknn", _rknn(b"[" * 100000 + b"]" * 100000))
    return (["models", "--manifest", m], 1, f"error: {tmp}/m.rknn: offset 0x48: trailing model "
            "JSON does not parse: JSON nested deeper than 64 levels: refused", None)


def case_traceback_manifest_json_list(tmp, sm):
    d = tmp / "images"
    d.mkdir()
    (d / "idbloader.img").write_bytes(sm["idbloader"].read_bytes())
    (tmp / "manifest.json").write_text("[1, 2]")
    return (["inspect", d / "idbloader.img"], 1, f"error: {tmp}/manifest.json: must be a JSON "
            "object (the build manifest)", None)


def case_traceback_yaml_list_key(tmp, sm):
    m = tmp / "models.yaml"
    m.write_text("models:\n  - {name: m, path: a, type: raw}\n? [1, 2]\n: x\n")
    return (["models", "--manifest", m], 1, f"error: {m}:3: a mapping key must be a plain value, "
            "not a list or mapping", None)


def case_traceback_yaml_recursive_alias(tmp, sm):
    m = tmp / "models.yaml"
    m.write_text("models: &a [*a]\n")
    return (["models", "--manifest", m], 1, f"error: {m}:1: recursive alias (a node that "
            "contains itself): refused", None)


def case_traceback_fragment_latin1(tmp, sm):
    frag = tmp / "x.fragment"
    frag.write_bytes(b'CONFIG_MODEL_MANIFEST="caf\xe9"\n')
    return (["config", "--board", "rk3588", "--output", tmp / "out", "--fragment", frag], 1,
            f"error: {frag}:1: not UTF-8 text (byte 0xe9)", None)


def case_traceback_dvfs_float_hz(tmp, sm):
    from seedfw.paths import BOARD_DIR
    text = (BOARD_DIR / "rk3588" / "dvfs.yaml").read_text()
    d = tmp / "dvfs.yaml"
    d.write_text(text.replace("hz: 1008000000,", "hz: 1008000000.0,", 1))
    line = next(i for i, l in enumerate(d.read_text().splitlines(), 1) if "1008000000.0" in l)
    return (["dvfs", "--board", "rk3588", "--file", d, "--output", tmp / "out"], 1,
            f"error: {d}:{line}: field 'domains[0].opps[0].hz': expected integer, got float "
            "1008000000.0", None)


def case_traceback_stats_top_abc(tmp, sm):
    return (["stats", sm["fit"], "--top", "abc"], 1, "error: --top: 'abc' is not a whole number "
            "of symbols from 1 to 100000", None)


def case_unbounded_dev_zero(tmp, sm):
    return (["inspect", "/dev/zero"], 1, "error: /dev/zero: is a character device, not a regular "
            "file: refused", None)


def case_unbounded_fifo(tmp, sm):
    f = tmp / "fifo"
    os.mkfifo(f)
    return (["inspect", f], 1, f"error: {f}: is a FIFO, not a regular file: refused", None)


def case_unbounded_lz4_bomb(tmp, sm):
    from seedfw.compress import container
    from seedfw.images import package
    from seedfw.images.entries import ModelEntry
    stored = bytearray(container.write_container(bytes(1 << 20), block_size=65536))
    struct.pack_into("<I", stored, 16, 1536 << 20)          # original_size 1.5 GiB
    f = tmp / "bomb.pkg"
    f.write_bytes(package.encode([ModelEntry("bomb", bytes(stored), 1536 << 20, 64,
                                             model_type="raw", compression="lz4")]))
    return ["inspect", f, "--json"], 1, f"error: {f}: 1 entries failed verification: bomb", \
        lambda out: "over the limit" in out


def case_unbounded_fit_2500_images(tmp, sm):
    f = tmp / "many.itb"
    f.write_bytes(fit([image_node(f"i{i}", b"x") for i in range(2500)]))
    return (["inspect", f], 1, f"error: {f}: offset 0x4be54: damaged FDT structure block: more "
            "than 4096 nodes: refused", None)


def case_unbounded_fit_overlapping_span(tmp, sm):
    span = bytes(1 << 20)
    head = fit([(f"i{i}", [("data-position", u32(1 << 16)), ("data-size", u32(len(span))),
                           ("type", s("firmware"))],
                 [("hash-1", [("algo", s("sha256")),
                              ("value", hashlib.sha256(span).digest())], [])])
                for i in range(200)])
    f = tmp / "span.itb"
    f.write_bytes(head.ljust(1 << 16, b"\0") + span)
    return (["inspect", f], 1, f"error: {f}: /images/i5/hash-1: the ranges this file declares "
            "add up to more than 4x its size (overlapping data): refused", None)


def case_unbounded_dvfs_domains(tmp, sm):
    from seedfw import dvfs
    from seedfw.images import package
    from seedfw.images.entries import DvfsEntry
    from seedfw.paths import BOARD_DIR
    table = bytearray(dvfs.encode(dvfs.load(BOARD_DIR / "rk3588" / "dvfs.yaml"), "balanced"))
    struct.pack_into("<H", table, 16, 20000)
    struct.pack_into("<I", table, 12, 0)
    struct.pack_into("<I", table, 12, zlib.crc32(table))
    f = tmp / "dvfs.pkg"
    f.write_bytes(package.encode([DvfsEntry("dvfs", bytes(table))]))
    return ["inspect", f, "--json"], 1, f"error: {f}: 1 entries failed verification: dvfs", \
        lambda out: "20000 domains is over the limit of 64" in out


def case_unbounded_gpt_1024_partitions(tmp, sm):
    f = tmp / "disk.img"
    blob = bytearray(sm["disk"].read_bytes())
    struct.pack_into("<I", blob, 512 + 80, 1024)
    _gpt_fix_crcs(blob)
    f.write_bytes(bytes(blob))
    return (["inspect", f], 1, f"error: {f}: offset 0x20c: GPT header size 92, 1024 entries of "
            "128 bytes (limit 128 entries)", None)


def case_unbounded_gpt_overlapping(tmp, sm):
    from seedfw.images import samples as smod
    f = tmp / "disk.img"
    f.write_bytes(smod.gpt_disk([(f"p{i}", 64, bytes(512)) for i in range(100)]))
    return (["inspect", f], 1, f"error: {f}: partition entry 2: partitions 1 and 2 overlap (LBA "
            "64..128 and 64..128)", None)


def case_unbounded_rsa_8k(tmp, sm):
    key = tmp / "key.dtb"
    key.write_bytes(fdt(("", [], [("signature", [], [
        ("key-dev", [("rsa,modulus", b"\xff" * 1024), ("key-name-hint", s("dev"))], [])])])))
    return (["inspect", sm["fit"], "--key", key], 1, f"error: {key}: /signature/key-dev/"
            "rsa,modulus: RSA modulus of 8192 bits is over the limit of 4096", None)


def case_unbounded_billion_laughs(tmp, sm):
    m = tmp / "models.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    m.write_text("\n".join(lines) + "\nmodels: *a8\n")
    return (["models", "--manifest", m], 1, f"error: {m}:1: aliases expand to more than the node "
            "limit (a \"billion laughs\" document?): refused", None)


def case_path_board_dotdot(tmp, sm):
    from seedfw import boards
    return (["config", "--board", "../../evilb"], 1, "error: '../../evilb' is not a board name "
            f"(lower-case letters, digits, '-'; known: {', '.join(boards.names())})", None)


def case_path_manifest_dotdot(tmp, sm):
    m = tmp / "models.yaml"
    m.write_text("models:\n  - {name: m, path: ../../../../etc/passwd, type: raw}\n")
    return (["models", "--manifest", m], 1, f"error: {m}:2: path '../../../../etc/passwd' must "
            f"be relative to {tmp.name}/ without '..'", None)


def case_path_manifest_absolute(tmp, sm):
    m = tmp / "models.yaml"
    m.write_text("models:\n  - {name: m, path: /etc/passwd, type: raw}\n")
    return (["models", "--manifest", m], 1, f"error: {m}:2: path '/etc/passwd' must be "
            f"relative to {tmp.name}/ without '..'", None)


def case_path_manifest_symlink(tmp, sm):
    (tmp / "link.raw").symlink_to("/etc/passwd")
    m = tmp / "models.yaml"
    m.write_text("models:\n  - {name: m, path: link.raw, type: raw}\n")
    return (["models", "--manifest", m], 1, f"error: {m}:2: path 'link.raw' leads out of "
            f"{tmp.name}/ (through a symlink, to /etc/passwd); set SEEDFW_ALLOW_OUTSIDE_PATHS=1 "
            "to allow it", None)


def case_path_distclean_config_only(tmp, sm):
    d = tmp / "notours"
    d.mkdir()
    (d / ".config").write_text("CONFIG_X=y\n")
    return (["distclean", "--board", "rk3588", "--output", d], 1, f"error: {d}: --output: not a "
            "seedfw output directory (no .seedfw-output, which seedfw writes when it creates "
            "one); not touching it", None)


def case_path_clean_buildroot_tree(tmp, sm):
    d = tmp / "br"
    for sub in ("build", "images"):
        (d / sub).mkdir(parents=True)
        (d / sub / "keep").write_text("x")
    (d / ".config").write_text("BR2_x=y\n")
    return (["clean", "--board", "rk3588", "--output", d], 1, f"error: {d}: --output: not a "
            "seedfw output directory (no .seedfw-output, which seedfw writes when it creates "
            "one); not touching it", None)


def case_terminal_esc_fit_name(tmp, sm):
    f = tmp / "esc.itb"
    f.write_bytes(fit([image_node("a\x1b[2Jb", b"data")]))
    return ["inspect", f], 0, None, lambda out: "\x1b" not in out and "\\x1b" in out


def case_terminal_esc_package_name(tmp, sm):
    f = tmp / "esc.pkg"
    f.write_bytes(_pkg_with([("a\x1b]0;pwn\x07", b"data")]))
    return ["inspect", f], 0, None, lambda out: "\x1b" not in out and "\\x1b" in out


def case_terminal_esc_board_description(tmp, sm):
    from seedfw.paths import BOARD_DIR
    b = tmp / "rk3588" / "board.yaml"
    b.parent.mkdir()
    b.write_text((BOARD_DIR / "rk3588" / "board.yaml").read_text().replace(
        "description:", "description: \"\\e[31mred\\e[0m\" #", 1))
    return ["boards", "--check", b], 0, None, lambda out: "\x1b" not in out


def case_silent_yaml_duplicate_key(tmp, sm):
    m = tmp / "models.yaml"
    m.write_text("models: []\nmodels:\n  - {name: m, path: a, type: raw}\n")
    return (["models", "--manifest", m], 1, f"error: {m}:2: duplicate key 'models' (first at "
            "line 1)", None)


def case_silent_kconfig_nul(tmp, sm):
    frag = tmp / "x.fragment"
    frag.write_bytes(b'CONFIG_MODEL_MANIFEST="a\\\x00b"\n')
    frag.write_bytes(b'CONFIG_MODEL_MANIFEST="a\x00b"\n')
    return (["config", "--board", "rk3588", "--output", tmp / "out", "--fragment", frag], 1,
            f"error: {frag}:1: string value contains control character 0x00", None)


def case_silent_duplicate_region(tmp, sm):
    b = _board_copy(tmp, "name: pmu-sram", "name: dvfs")
    return (["boards", "--check", b], 1, f"error: {b}:13: memory region 'dvfs' is defined twice",
            None)


def case_silent_overlapping_regions(tmp, sm):
    b = _board_copy(tmp, "{name: dvfs, base: 0x1f000000", "{name: dvfs, base: 0x0003f000")
    return (["boards", "--check", b], 1, f"error: {b}:13: memory regions 'bl31' and 'dvfs' "
            "overlap without one containing the other", None)


def case_silent_20_digit_base(tmp, sm):
    b = _board_copy(tmp, "base: 0x00040000", "base: 99999999999999999999")
    return ["boards", "--check", b], 1, None, lambda err: "99999999999999999999" in err


def case_silent_top_negative(tmp, sm):
    return (["stats", sm["fit"], "--top", "-5"], 1, "error: --top: '-5' is not a whole number "
            "of symbols from 1 to 100000", None)


def case_silent_key_on_package(tmp, sm, key=None):
    key = tmp / "key.dtb"
    key.write_bytes(fdt(("", [], [("signature", [], [
        ("key-dev", [("rsa,modulus", b"\xc5" * 256), ("key-name-hint", s("dev"))], [])])])))
    f = sm["package"]
    return (["inspect", f, "--key", key], 1, f"error: {f}: 1 entries failed "
            "verification: signature", None)


def case_silent_key_on_disk(tmp, sm):
    key = tmp / "key.dtb"
    key.write_bytes(fdt(("", [], [("signature", [], [
        ("key-dev", [("rsa,modulus", b"\xc5" * 256), ("key-name-hint", s("dev"))], [])])])))
    f = sm["disk"]
    return (["inspect", f, "--key", key], 1, f"error: {f}: 1 entries failed "
            "verification: firmware/conf-1", None)


def case_verdict_fit_two_hashes_ok(tmp, sm):
    """The hash budget leaves room for real FITs: one 1 MiB image with sha256 and sha1 nodes."""
    data = os.urandom(1 << 20)
    f = tmp / "two.itb"
    f.write_bytes(fit([("fw", [("data", data), ("type", s("firmware"))],
                        [("hash-1", [("algo", s("sha256")),
                                     ("value", hashlib.sha256(data).digest())], []),
                         ("hash-2", [("algo", s("sha1")),
                                     ("value", hashlib.sha1(data).digest())], [])])]))
    return ["inspect", f], 0, None, lambda out: "sha256+sha1" in out


def case_verdict_fit_data_and_position(tmp, sm):
    """`data` (benign, hash matches) plus data-position (what U-Boot would load)."""
    f = tmp / "both.itb"
    name, props, children = image_node("fw", b"benign")
    f.write_bytes(fit([(name, props + [("data-position", u32(0)), ("data-size", u32(4))],
                        children)]))
    return (["inspect", f], 1, f"error: {f}: /images/fw: image 'fw' has both embedded data and "
            "data-position (U-Boot would load the external bytes): refused", None)


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}
CLASSES = ("verdict", "traceback", "unbounded", "path", "terminal", "silent")
CRASHES = Path(__file__).resolve().parent / "hostile_crashes"


def test_docs_table_every_cap():
    """docs/hostile-input.md states every cap reading.py enforces (one table, kept honest)."""
    from seedfw import reading
    doc = (Path(__file__).resolve().parents[1] / "docs" / "hostile-input.md").read_text()
    for name in [*reading.CAPS, *reading.SIZE_CAPS]:
        assert f"`{name}`" in doc, name


def test_fuzz_campaign_finds_a_planted_bug(tmp_path):
    """Negative control of the Python campaigns: a reader with a planted IndexError behind a
    3-byte prefix is found (crash file written, exit before the run limit) — so 0 crashes in
    the real campaigns means something."""
    from seedfw.fuzz import pyfuzz
    r = pyfuzz.run_campaign("py-planted", runs=2_000_000, root=tmp_path)
    assert r.crashes, r.log.read_text()[-2000:]
    assert r.crashes[0].read_bytes()[:3] == b"SFW"
    assert r.executions < 2_000_000
    assert "IndexError" in r.log.read_text()


def test_every_class_has_cases():
    for cls in CLASSES:
        assert sum(n.startswith(cls + "_") for n in CASES) >= 1, cls


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile(name, samples, tmp_path):
    args, rc, line, check = CASES[name](tmp_path, samples)
    run = hostile.invoke_bounded(*args, timeout=TIME_BOUND * 3)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.returncode == rc, run.stdout + run.stderr
    # A bound of the (wall time, the CLI's start-up included), not a race: say it is one.
    assert run.seconds <= TIME_BOUND, f"host bound: {name} took {run.seconds:.1f} s (over {TIME_BOUND:g} s)"
    assert run.max_rss_mib <= RSS_BOUND_MIB, run.max_rss_mib
    errors = hostile.error_lines(run)
    if rc:
        assert len(errors) == 1, run.stderr
        if line is not None and line.endswith(".."):       # a prefix (the rest names sizes)
            assert errors[0].startswith(line), errors[0]
        elif line is not None:
            assert errors[0] == line
    else:
        assert not errors, run.stderr
    if check is not None:
        assert check(run.stdout if rc == 0 or line is not None else run.stderr), \
            run.stdout + run.stderr


@pytest.mark.parametrize("crash", sorted(str(p.relative_to(CRASHES)) for p in
                                         CRASHES.glob("*/*") if p.is_file()) or ["none"])
def test_fuzz_crashes_stay_fixed(crash):
    """Every input a campaign crashed on (tests/hostile_crashes/<target>/) now gives at most a
    SeedfwError from its reader."""
    if crash == "none":
        pytest.skip("no crash inputs kept")
    from seedfw.fuzz import pyfuzz
    from seedfw.errors import SeedfwError
    target, _ = crash.split("/", 1)
    try:
        pyfuzz.reader(target)((CRASHES / crash).read_bytes())
    except SeedfwError:
        pass
