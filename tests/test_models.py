"""Model manifest and RKNN framing checks.

The RKNN files here are SYNTHETIC (seedfw.models_synth): real RKNN-Toolkit2 outputs are not
available, so the tests build files with the real framing and break them in the ways that matter.
"""

from __future__ import annotations

import hashlib
import struct
import sys

import pytest

import models_synth
from seedfw import boards, models
from seedfw.errors import SeedfwError


def check(tmp_path, blob: bytes):
    p = tmp_path / "m.rknn"
    p.write_bytes(blob)
    return models.check_rknn(blob, p)


def rejected(tmp_path, blob: bytes) -> SeedfwError:
    with pytest.raises(SeedfwError) as exc:
        check(tmp_path, blob)
    return exc.value


def test_good_v1_24_byte_header(tmp_path):
    blob = models_synth.rknn(1, b"\x01\x02\x03\x04", {"name": "tiny"})
    info = check(tmp_path, blob)
    assert (info.version, info.header_size, info.data_size, info.encrypted) == (1, 24, 4, False)
    assert blob[24:28] == b"\x01\x02\x03\x04"
    assert info.meta["name"] == "tiny" and info.meta["synthetic"] is True


@pytest.mark.parametrize("version", [2, 6, 0x1002, 0x1004])
def test_64_byte_header_versions(tmp_path, version):
    blob = models_synth.rknn(version, b"W" * 10)
    info = check(tmp_path, blob)
    assert (info.header_size, info.data_size) == (64, 10)
    assert blob[64:74] == b"W" * 10


# ---------------------------------------------------------------- hand-written RKNN fixtures
# Written field by field from the published description of the RKNN container, not with
# models_synth (which shares models.rknn_header_size with the parser under test). Source:
# Netron's RKNN reader, lutzroeder/netron source/rknn.js, rknn.Container.read (commit
# 04181107f143672f3ce4a3bc8f3138e523f7c60a), whose version list Rockchip's own airockchip
# account updated (https://github.com/lutzroeder/netron/pull/1099, "RKNN Version update to 4"):
#   offset 0x00  "RKNN"                signature (the reader skips 8 bytes: 4 signature + 4 pad)
#   offset 0x08  u64 little-endian     container version
#   offset 0x10  u64 little-endian     data_size
#   offset 0x18  40 bytes              only for versions 2..6 and 0x1002..0x1004 (and data_size
#                                      > 0); versions 1 and 0x1001 have none; any other version
#                                      is "Unsupported RKNN container version"
#   then         data_size bytes       model data
#   then         u64 little-endian     json_size, then json_size bytes of JSON
# A file starting "CYPTRKNN" is an encrypted model (undocumented content).

HAND_V6 = (
    b"RKNN"                                      # 0x00 signature
    + b"\x00\x00\x00\x00"                        # 0x04 pad
    + b"\x06\x00\x00\x00\x00\x00\x00\x00"        # 0x08 version 6 (u64 LE)
    + b"\x05\x00\x00\x00\x00\x00\x00\x00"        # 0x10 data_size 5 (u64 LE)
    + b"\x00" * 40                               # 0x18 40 header bytes (version 2..6): 64 total
    + b"\xde\xad\xbe\xef\x01"                    # 0x40 model data, 5 bytes
    + b"\x0d\x00\x00\x00\x00\x00\x00\x00"        # 0x45 json_size 13 (u64 LE)
    + b'{"name":"hw"}'                           # 0x4d JSON, 13 bytes; file ends at 0x5a
)

HAND_V1 = (
    b"RKNN\x00\x00\x00\x00"                        # 0x00 signature + pad
    + b"\x01\x00\x00\x00\x00\x00\x00\x00"        # 0x08 version 1: no 40-byte block
    + b"\x03\x00\x00\x00\x00\x00\x00\x00"        # 0x10 data_size 3
    + b"abc"                                     # 0x18 model data
    + b"\x02\x00\x00\x00\x00\x00\x00\x00"        # 0x1b json_size 2
    + b"{}"                                      # 0x23 JSON; file ends at 0x25
)


def test_hand_written_v6_fields(tmp_path):
    assert len(HAND_V6) == 0x5A
    info = check(tmp_path, HAND_V6)
    assert (info.version, info.header_size, info.data_size, info.json_size, info.encrypted) == \
        (6, 64, 5, 13, False)
    assert info.meta == {"name": "hw"}
    assert HAND_V6[info.header_size:info.header_size + info.data_size] == b"\xde\xad\xbe\xef\x01"


def test_hand_written_v1_fields(tmp_path):
    assert len(HAND_V1) == 0x25
    info = check(tmp_path, HAND_V1)
    assert (info.version, info.header_size, info.data_size, info.json_size, info.meta) == \
        (1, 24, 3, 2, {})


@pytest.mark.parametrize("version, header", [(0x1001, 24), (2, 64), (3, 64), (4, 64), (5, 64),
                                             (0x1002, 64), (0x1003, 64), (0x1004, 64)])
def test_hand_written_every_listed_version(tmp_path, version, header):
    pad = b"\x00" * (header - 24)
    blob = (b"RKNN\x00\x00\x00\x00" + version.to_bytes(8, "little") + (1).to_bytes(8, "little")
            + pad + b"Z" + (2).to_bytes(8, "little") + b"{}")
    info = check(tmp_path, blob)
    assert (info.version, info.header_size, info.data_size) == (version, header, 1)


def test_hand_written_corruptions_rejected(tmp_path):
    def patched(at: int, new: bytes) -> bytes:
        return HAND_V6[:at] + new + HAND_V6[at + len(new):]

    # Signature
    assert rejected(tmp_path, patched(0x00, b"RKNM")).field == "offset 0x0"
    # data_size one larger: the JSON length is read one byte late (at 0x46), and is absurd
    err = rejected(tmp_path, patched(0x10, b"\x06"))
    assert err.field == "offset 0x46" and err.message.startswith("JSON length 88630840666651361")
    # data_size far too large
    assert rejected(tmp_path, patched(0x10, b"\x00\x10")).message.startswith(
        "data_size 4096 disagrees with the file length 90")
    # json_size one short: a byte left over after the JSON
    assert rejected(tmp_path, patched(0x45, b"\x0c")).message == (
        "JSON length 12 disagrees with the file length 90 (the JSON would end at 89)")
    # Version 6 changed to 1 (no 40-byte block): the JSON length is read at 0x18 + 5 = 0x1d,
    # inside the zero block; and version 1 changed to 6: too short for a 64-byte header
    assert (rejected(tmp_path, patched(0x08, b"\x01")).field,
            rejected(tmp_path, patched(0x08, b"\x01")).message) == (
        "offset 0x1d", "JSON length 0 disagrees with the file length 90 (the JSON would end at 37)")
    assert rejected(tmp_path, HAND_V1[:8] + b"\x06" + HAND_V1[9:]).message.startswith(
        "truncated: 37 bytes is shorter than the 64-byte header")
    # JSON damaged
    assert rejected(tmp_path, patched(0x4D, b"[")).message.startswith(
        "trailing model JSON does not parse")


@pytest.mark.parametrize("version", [0, 7, 0x1000, 0x1005, 0x2006, 1 << 32])
def test_unlisted_versions_rejected(tmp_path, version):
    """Netron's reader throws "Unsupported RKNN container version" for these; so do we (we used
    to guess a 24-byte header for them)."""
    blob = HAND_V1[:8] + version.to_bytes(8, "little") + HAND_V1[16:]
    err = rejected(tmp_path, blob)
    assert (err.field, err.message) == ("offset 0x8", f"unsupported RKNN container version "
                                        f"{version} (0x{version:x}); known: 1, 2..6, "
                                        f"0x1001..0x1004")


def test_encrypted_is_accepted_and_flagged(tmp_path):
    info = check(tmp_path, models_synth.rknn_encrypted(b"\x8f" * 100))
    assert info.encrypted and info.version is None


def test_bad_magic(tmp_path):
    blob = b"ONNX" + models_synth.rknn(1, b"abc")[4:]
    err = rejected(tmp_path, blob)
    assert (err.field, err.message) == ("offset 0x0",
                                        "bad magic b'ONNX\\x00\\x00\\x00\\x00' (expected 'RKNN' or "
                                        "'CYPTRKNN')")


def test_lying_data_size(tmp_path):
    blob = bytearray(models_synth.rknn(1, b"d" * 100))
    struct.pack_into("<Q", blob, 16, 5000)
    err = rejected(tmp_path, bytes(blob))
    assert err.message == (f"data_size 5000 disagrees with the file length {len(blob)} "
                           f"(header 24 + data + 8-byte JSON length would need 5032)")


def test_lying_json_length(tmp_path):
    good = models_synth.rknn(1, b"d" * 100)
    blob = good + b"trailing junk"
    err = rejected(tmp_path, blob)
    assert err.field == "offset 0x7c"
    assert err.message.startswith(f"JSON length {len(good) - 132} disagrees with the file length "
                                  f"{len(blob)}")


def test_truncated(tmp_path):
    blob = models_synth.rknn(6, b"d" * 100)
    assert rejected(tmp_path, blob[:20]).message == \
        "truncated: 20 bytes is shorter than the 24-byte RKNN header"
    assert rejected(tmp_path, blob[:40]).message == \
        "truncated: 40 bytes is shorter than the 64-byte header of RKNN version 6"
    assert rejected(tmp_path, blob[:-1]).message.startswith("JSON length")   # last byte cut
    assert rejected(tmp_path, blob[:150]).message.startswith("data_size 100 disagrees")


def test_bad_json(tmp_path):
    blob = bytearray(models_synth.rknn(1, b"d"))
    blob[-1:] = b"!"
    assert rejected(tmp_path, bytes(blob)).message.startswith("trailing model JSON does not parse")


def test_onnx_check():
    models.check_onnx(models_synth.onnx_empty_graph("g"), "x.onnx")
    with pytest.raises(SeedfwError) as exc:
        models.check_onnx(b"\x12\x00", "x.onnx")
    assert exc.value.message.startswith("does not look like ONNX: first byte 0x12")


def manifest(tmp_path, text: str, blobs: dict[str, bytes]):
    for name, data in blobs.items():
        (tmp_path / name).write_bytes(data)
    p = tmp_path / "models.yaml"
    p.write_text(text)
    return p


@pytest.fixture
def synth_manifest(tmp_path):
    return models_synth.write_fixture(tmp_path / "synth")


def test_fixture_manifest_loads_with_sha256(synth_manifest):
    ms = models.load_manifest(synth_manifest,
                              partition_size=boards.get("rk3588").image["partition_size"])
    assert ms and all(m.sha256 == hashlib.sha256(m.path.read_bytes()).hexdigest() for m in ms)
    yolo = models.load_manifest(synth_manifest)[0]
    assert (yolo.name, yolo.type, yolo.alignment, yolo.rknn.version) == ("yolov8s", "rknn", 4096, 6)


def test_manifest_rejects_bad_blob_naming_it(tmp_path):
    p = manifest(tmp_path, "models:\n  - {name: a, path: a.rknn, type: rknn}\n",
                 {"a.rknn": b"NOPE" + bytes(40)})
    with pytest.raises(SeedfwError) as exc:
        models.load_manifest(p)
    assert exc.value.file.endswith("a.rknn") and exc.value.message.startswith("bad magic")


def test_partition_limit_names_blob_and_limit(tmp_path):
    p = manifest(tmp_path, "models:\n  - {name: a, path: a.raw, type: raw, alignment: 4096}\n"
                           "  - {name: big, path: b.raw, type: raw, alignment: 4096}\n",
                 {"a.raw": b"a" * 100, "b.raw": b"b" * 5000})
    with pytest.raises(SeedfwError) as exc:
        models.load_manifest(p, partition_size=8192)
    assert (exc.value.field, exc.value.message) == (
        "line 3", "model 'big': 5000 bytes brings the models to 9096 bytes, over the partition "
                  "limit of 8192 bytes (0x2000)")
    assert len(models.load_manifest(p, partition_size=9096)) == 2   # exactly at the limit is fine


def test_manifest_field_errors(tmp_path):
    cases = {
        "models:\n  - {name: a, path: a.raw, type: tflite}\n":
            "field 'models[0].type': 'tflite' is not one of rknn, onnx, raw",
        "models:\n  - {name: a, path: a.raw, type: raw, alignment: 48}\n":
            "model 'a': alignment 48 is not a power of two",
        "models:\n  - {name: a, path: a.raw, type: raw}\n  - {name: a, path: a.raw, type: raw}\n":
            "model 'a': duplicate name",
        "models:\n  - {name: a, path: missing.raw, type: raw}\n":
            "model 'a': cannot read missing.raw: No such file or directory",
    }
    for text, message in cases.items():
        p = manifest(tmp_path, text, {"a.raw": b"x"})
        with pytest.raises(SeedfwError) as exc:
            models.load_manifest(p)
        assert exc.value.message == message


def test_lz4_compression(tmp_path):
    from seedfw.compress import container

    p = manifest(tmp_path, "models:\n  - {name: a, path: a.raw, type: raw, compression: lz4}\n",
                 {"a.raw": bytes(4096)})
    (m,) = models.load_manifest(p)
    assert m.compression == "lz4" and m.stored_size < m.size
    assert container.read_container(m.stored) == bytes(4096) and m.sha256 == hashlib.sha256(
        bytes(4096)).hexdigest()


def test_lz4_without_the_compression_package_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "seedfw.compress.container", None)   # import now fails
    monkeypatch.delattr("seedfw.compress.container", raising=False)
    p = manifest(tmp_path, "models:\n  - {name: a, path: a.raw, type: raw, compression: lz4}\n",
                 {"a.raw": bytes(16)})
    with pytest.raises(SeedfwError) as exc:
        models.load_manifest(p)
    assert exc.value.message.startswith("compression 'lz4' is not available")


def test_for_build_follows_kconfig(synth_manifest):
    b = boards.get("rk3588")
    assert models.for_build(b, {"MODELS": False}) == []
    ms = models.for_build(b, {"MODELS": True, "MODEL_MANIFEST": str(synth_manifest)})
    assert [m.name for m in ms] == ["yolov8s", "mobilenet_v2", "face_detect", "labels"]


# ---- synthetic blobs are flagged from their own metadata (issue 11) ---------------------------

def test_synthetic_marker_reads_the_blob_not_the_name():
    assert models.synthetic_marker("rknn", models_synth.rknn(6, b"w" * 64)) == \
        "RKNN JSON synthetic=true"
    assert models.synthetic_marker("onnx", models_synth.onnx_empty_graph("g")) == \
        "ONNX producer seedfw-synth"
    # negative controls: RKNN whose JSON says it is real, another producer, raw, encrypted
    assert models.synthetic_marker("rknn", models_synth.rknn(6, b"w", {"synthetic": False})) is None
    other = models_synth.onnx_empty_graph("g").replace(b"seedfw-synth", b"pytorch-2.1")
    assert models.synthetic_marker("onnx", other) is None
    assert models.synthetic_marker("raw", b"person\n") is None
    assert models.synthetic_marker("rknn", models_synth.rknn_encrypted(b"\x8f" * 40)) is None


def test_manifest_flags_synthetic_blobs_whatever_their_names(tmp_path, synth_manifest):
    p = manifest(tmp_path, "models:\n  - {name: production_net, path: a.rknn, type: rknn}\n"
                           "  - {name: yolov8s, path: b.rknn, type: rknn}\n",
                 {"a.rknn": models_synth.rknn(1, b"x" * 32),
                  "b.rknn": models_synth.rknn(1, b"x" * 32, {"synthetic": False})})
    ms = models.load_manifest(p)
    assert [(m.name, bool(m.synthetic)) for m in ms] == [("production_net", True),
                                                         ("yolov8s", False)]
    assert models.synthetic_summary(ms) == ("1 of 2 model blobs are SYNTHETIC (filler, not "
                                            "runnable models): production_net")
    rk = models.load_manifest(synth_manifest)
    assert [m.name for m in rk if m.synthetic] == ["yolov8s", "mobilenet_v2", "face_detect"]


def test_invoke_models_prints_synthetic(synth_manifest):
    from cli import invoke

    proc = invoke("models", "--manifest", str(synth_manifest))
    assert proc.returncode == 0, proc.stderr
    lines = {}                      # one record per model: its first line, then indented lines
    for l in proc.stdout.splitlines():
        if l.startswith(("warning", "4 models")):
            continue
        if l.startswith(" "):
            lines[name] += "\n" + l
        else:
            name = l.split()[0]
            lines[name] = l
    for name in ("yolov8s", "mobilenet_v2", "face_detect"):
        assert "SYNTHETIC filler" in lines[name], lines[name]
    assert "SYNTHETIC" not in lines["labels"]
    assert proc.stdout.splitlines()[-1] == ("warning: 3 of 4 model blobs are SYNTHETIC (filler, "
                                            "not runnable models): yolov8s, mobilenet_v2, "
                                            "face_detect")


def test_build_summary_line_flags_synthetic_models(tmp_path, synth_manifest):
    """The line `invoke build` prints after a board's build (cli/build.py), on a configured
    output directory's config.json; no build needed."""
    import json
    from types import SimpleNamespace

    from seedfw.cli.build import _models_line

    (tmp_path / "config.json").write_text(json.dumps({
        "MODELS": True, "MODEL_MANIFEST": str(synth_manifest)}))
    line = _models_line(SimpleNamespace(outdir=tmp_path, board="rk3588"))
    assert line.startswith("  models  4 blobs, ") and "[bold yellow]3 of 4 model blobs are " \
        "SYNTHETIC (filler, not runnable models): yolov8s, mobilenet_v2, face_detect[/]" in line
    (tmp_path / "config.json").write_text(json.dumps({"MODELS": False}))
    assert _models_line(SimpleNamespace(outdir=tmp_path, board="rk3588")) is None
