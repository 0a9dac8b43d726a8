"""Model manifest and RKNN framing checks.

The RKNN files here are SYNTHETIC (seedfw.models_synth): real RKNN-Toolkit2 outputs are not
available, so the tests build files with the real framing and break them in the ways that matter.
"""

from __future__ import annotations

import hashlib
import struct
import sys

import pytest

from seedfw import boards, models, models_synth
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


@pytest.mark.parametrize("version", [7, 0x1001, 0x1005])
def test_versions_outside_ranges_use_24_bytes(tmp_path, version):
    assert check(tmp_path, models_synth.rknn(version, b"x")).header_size == 24


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


def test_committed_manifests_load_with_sha256():
    for board in ("rk3588", "qemu-aarch64"):
        ms = models.load_manifest(boards.get(board).dir / "models.yaml",
                                  partition_size=boards.get(board).image["partition_size"])
        assert ms and all(m.sha256 == hashlib.sha256(m.path.read_bytes()).hexdigest() for m in ms)
        assert all(m.size < 8192 for m in ms)          # committed blobs stay small
    yolo = models.load_manifest(boards.get("rk3588").dir / "models.yaml")[0]
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


def test_for_build_follows_kconfig():
    b = boards.get("rk3588")
    assert models.for_build(b, {"MODELS": False}) == []
    ms = models.for_build(b, {"MODELS": True, "MODEL_MANIFEST": "board/$(SEEDFW_BOARD)/models.yaml"})
    assert [m.name for m in ms] == ["yolov8s", "mobilenet_v2", "face_detect", "labels"]
