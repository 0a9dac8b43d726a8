"""Signed images: `invoke keys --new`, FIT signing (real mkimage), `inspect` verifying with the
public key found next to the image, `flash` refusing unsigned and tampered images when the
image's build requires signing — before any probe or USB tool is touched — and private keys
never reaching outputs, logs or the terminal.

No RK3588 is attached here. The refusal is checked through the real rockusb code path; to show
*where* it happens, PATH holds a stand-in `rkdeveloptool` that only records that it was run and
answers like rkdeveloptool does with no device. Refused images must leave no record; a good
image must reach it (positive control).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess

import pytest

from cli import invoke, one_error_line
from seedfw import boards, dvfs, fuzz
from seedfw.images import build_images, fdt, fit
from seedfw.images.entries import FirmwareEntry
from seedfw.images.inspect import inspect

BOARD = "rk3588"
VALUES = {"POWER_PROFILE": "balanced", "MODELS": True,
          "MODEL_MANIFEST": "tests/data/synth-models/models.yaml"}  # SYNTHETIC fixture


def key_body_lines(key_file) -> list[str]:
    """The base64 lines of a PEM private key (what must never appear anywhere else)."""
    return [l for l in key_file.read_text().splitlines() if l and not l.startswith("-----")]


def new_keys(directory, name="dev"):
    proc = invoke("keys", "--new", directory, "--name", name)
    assert proc.returncode == 0, proc.stderr
    return proc


def make_output(root, keys, *, sign=True, required=True, key_name="dev"):
    """A board output directory as a build leaves it: config.json and images/ with the FIT
    (signed by real mkimage when `sign`) and the public-key DTB."""
    out = root / "out"
    out.mkdir(parents=True)
    values = dict(VALUES, IMAGE_SIGN=sign, IMAGE_SIGN_REQUIRED=required,
                  IMAGE_SIGN_KEY_DIR=str(keys), IMAGE_SIGN_KEY_NAME=key_name)
    (out / "config.json").write_text(json.dumps(values))
    bl31 = root / "bl31.bin"            # real AArch64 code (see fuzz.seed_sections)
    bl31.write_bytes(fuzz.seed_sections(root / "elf")[0][1][:16384])
    build_images(values, boards.get(BOARD), out / "images", {"bl31": bl31})
    return out


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    root = tmp_path_factory.mktemp("signed")
    new_keys(root / "keys")
    return {"root": root, "keys": root / "keys", "out": make_output(root, root / "keys")}


@pytest.fixture
def rkdeveloptool(tmp_path):
    """A stand-in rkdeveloptool on PATH that records each call (see the module docstring)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "rkdeveloptool.calls"
    tool = bindir / "rkdeveloptool"
    tool.write_text(f'#!/bin/sh\necho "$@" >> {record}\necho "not found any devices!"\nexit 1\n')
    tool.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    return env, record


def flash(image, env, loader):
    return invoke("flash", "--board", BOARD, "--image", image, "--loader", loader, env=env)


# --------------------------------------------------------------------------- keys

def test_keys_new_creates_pair_and_prints_only_paths_and_fingerprint(tmp_path):
    proc = new_keys(tmp_path / "k")
    key, crt = tmp_path / "k" / "dev.key", tmp_path / "k" / "dev.crt"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert sorted(p.name for p in (tmp_path / "k").iterdir()) == ["dev.crt", "dev.key"]
    text = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-text"], capture_output=True,
                          text=True, check=True).stdout
    assert "Private-Key: (2048 bit, 2 primes)" in text
    # The certificate holds the key's public half.
    mod_key = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-modulus"],
                             capture_output=True, text=True, check=True).stdout
    mod_crt = subprocess.run(["openssl", "x509", "-in", crt, "-noout", "-modulus"],
                             capture_output=True, text=True, check=True).stdout
    assert mod_key == mod_crt
    der = subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-outform", "DER"],
                         capture_output=True, check=True).stdout
    fingerprint = "SHA256:" + base64.b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")
    assert proc.stdout.splitlines()[:3] == [
        f"private key: {key} (mode 0600; keep it out of the tree and of outputs)",
        f"certificate: {crt}", f"public key fingerprint: {fingerprint}"]
    for line in key_body_lines(key):
        assert line not in proc.stdout + proc.stderr


def test_keys_refuse_to_overwrite(tmp_path):
    new_keys(tmp_path)
    before = (tmp_path / "dev.key").read_bytes()
    line = one_error_line(invoke("keys", "--new", tmp_path))
    assert line == (f"error: {tmp_path / 'dev.key'}: already exists; not overwriting a key "
                    "(choose another --name or directory)")
    assert (tmp_path / "dev.key").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dev.crt", "dev.key"]


def test_keys_bad_options_are_one_clear_error(tmp_path):
    assert one_error_line(invoke("keys", "--new", tmp_path, "--bits", "1024")) == \
        "error: --bits: 1024 bits: mkimage signs with RSA 2048, 3072 or 4096"
    assert one_error_line(invoke("keys", "--new", tmp_path, "--name", "../x")) == \
        "error: --name: key name '../x' must be a plain file name"
    assert one_error_line(invoke("keys")) == "error: --new: give the directory for the new key " \
                                             "pair: --new DIR"
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------------------------- sign + inspect

def test_signed_fit_verifies_with_the_key_found_next_to_it(signed):
    itb = signed["out"] / "images" / f"{BOARD}.itb"
    sig = fdt.parse(itb.read_bytes()).children["configurations"].children["conf-1"] \
        .children["signature-1"]
    assert sig.str("algo") == "sha256,rsa2048" and len(sig.props["value"]) == 256
    report = inspect(itb)
    assert report.ok
    assert [(r.name, r.detail) for r in report.rows if r.type == "signature"] == \
        [("conf-1/signature-1", "signature ok")]
    assert f"signatures checked with {BOARD}-pubkey.dtb (found next to the image)" in report.notes
    proc = invoke("inspect", itb)
    assert proc.returncode == 0 and "signature ok" in proc.stdout, proc.stderr
    # find_key=False keeps the old behaviour: the signature is only reported.
    assert not [r for r in inspect(itb, find_key=False).rows if r.type == "signature"]


def forge(itb, target):
    """Swap the DVFS table for another profile's, fixing its hash node: only the signature
    can tell (every image hash still matches)."""
    blob = itb.read_bytes()
    node = fdt.parse(blob).children["images"].children["dvfs"]
    old, old_hash = node.props["data"], node.children["hash-1"].props["value"]
    new = dvfs.encode(dvfs.load(boards.get(BOARD).dvfs_file), "performance")
    assert len(new) == len(old) and new != old
    # the first occurrences: image "dvfs" (the FIT's boot package image keeps its own copy)
    target.write_bytes(blob.replace(old, new, 1).replace(old_hash, hashlib.sha256(new).digest(), 1))
    return target


def test_tampered_fit_fails_inspect(signed):
    images = signed["out"] / "images"
    forged = forge(images / f"{BOARD}.itb", images / "forged.itb")
    try:
        report = inspect(forged)
        assert all(r.hash_ok for r in report.rows if r.type != "signature")
        assert [(r.name, r.hash_ok, r.detail) for r in report.rows if r.type == "signature"] == \
            [("conf-1/signature-1", False, "signature BAD")]
        proc = invoke("inspect", forged)
        assert one_error_line(proc) == \
            f"error: {forged}: 1 entries failed verification: conf-1/signature-1"
    finally:
        forged.unlink()


# --------------------------------------------------------------------------- flash refuses

def test_flash_refuses_unsigned_fit_before_the_tool_runs(signed, tmp_path, rkdeveloptool):
    env, record = rkdeveloptool
    images = signed["out"] / "images"
    unsigned = fit.build([FirmwareEntry("bl31", b"\x00" * 1024)], images / "unsigned.itb",
                         description="unsigned")
    try:
        line = one_error_line(flash(unsigned, env, tmp_path / "loader.bin"))
    finally:
        unsigned.unlink()
        unsigned.with_name("unsigned.itb.its").unlink()
    assert line == (f"error: {unsigned}: signature: unsigned FIT: board '{BOARD}' requires signed "
                    f"images (IMAGE_SIGN_REQUIRED in {signed['out'] / 'config.json'})")
    assert not record.exists()


def test_flash_refuses_an_image_that_is_not_a_fit(signed, tmp_path, rkdeveloptool):
    env, record = rkdeveloptool
    line = one_error_line(flash(signed["out"] / "images" / "dvfs" / "dvfs.bin", env,
                                tmp_path / "loader.bin"))
    assert line.endswith(": signature: unsigned image (not a signed FIT): board 'rk3588' requires "
                         f"signed images (IMAGE_SIGN_REQUIRED in {signed['out'] / 'config.json'})")
    assert not record.exists()


def test_flash_refuses_tampered_fit_before_the_tool_runs(signed, tmp_path, rkdeveloptool):
    env, record = rkdeveloptool
    images = signed["out"] / "images"
    forged = forge(images / f"{BOARD}.itb", images / "forged.itb")
    try:
        line = one_error_line(flash(forged, env, tmp_path / "loader.bin"))
    finally:
        forged.unlink()
    assert line == (f"error: {forged}: signature: signature check failed (conf-1/signature-1: "
                    f"signature BAD): board '{BOARD}' requires signed images (IMAGE_SIGN_REQUIRED "
                    f"in {signed['out'] / 'config.json'})")
    assert not record.exists()


@pytest.mark.slow
def test_flash_refuses_fit_signed_with_another_key(tmp_path, rkdeveloptool):
    """The check uses the configured certificate, not the public-key DTB in the output: a FIT
    signed (and its DTB written) with a different key is refused."""
    env, record = rkdeveloptool
    new_keys(tmp_path / "mine")
    new_keys(tmp_path / "theirs")
    out = make_output(tmp_path / "a", tmp_path / "theirs")
    cfg = json.loads((out / "config.json").read_text())
    cfg["IMAGE_SIGN_KEY_DIR"] = str(tmp_path / "mine")
    (out / "config.json").write_text(json.dumps(cfg))
    line = one_error_line(flash(out / "images" / f"{BOARD}.itb", env, tmp_path / "loader.bin"))
    assert "signature check failed (conf-1/signature-1: signature BAD)" in line
    assert not record.exists()


def test_flash_passes_a_good_signed_fit_to_the_backend(signed, tmp_path, rkdeveloptool):
    """Positive control: the same check lets a correctly signed image through, and the backend
    runs (and reports that no device is attached)."""
    env, record = rkdeveloptool
    loader = tmp_path / "loader.bin"
    loader.write_bytes(b"\0" * 512)
    line = one_error_line(flash(signed["out"] / "images" / f"{BOARD}.itb", env, loader))
    assert line == "error: usb: no Rockchip device in maskrom mode on USB (hold the maskrom key " \
                   "and power-cycle the board)"
    assert record.read_text().split() == ["db", str(loader)]


def test_flash_allows_unsigned_when_not_required(tmp_path, rkdeveloptool):
    env, record = rkdeveloptool
    out = make_output(tmp_path, tmp_path / "nokeys", sign=False, required=False)
    loader = tmp_path / "loader.bin"
    loader.write_bytes(b"\0" * 512)
    line = one_error_line(flash(out / "images" / f"{BOARD}.itb", env, loader))
    assert line.startswith("error: usb: no Rockchip device")
    assert record.exists()


# --------------------------------------------------------------------------- real build

def every_file(root):
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.isfile(p) and not os.path.islink(p):
                yield p


@pytest.mark.slow
def test_real_build_signs_the_fit_and_never_copies_the_key(tmp_path):
    keys = tmp_path / "keys"
    new_keys(keys, "board")
    frag = tmp_path / "sign.fragment"
    frag.write_text(f'CONFIG_IMAGE_SIGN=y\nCONFIG_IMAGE_SIGN_KEY_DIR="{keys}"\n'
                    'CONFIG_IMAGE_SIGN_KEY_NAME="board"\nCONFIG_IMAGE_SIGN_REQUIRED=y\n')
    out = tmp_path / "out"
    proc = invoke("build", "--board", BOARD, "--output", out, "--fragment", frag, "--jobs", "1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    itb = out / "images" / f"{BOARD}.itb"
    listing = subprocess.run(["dumpimage", "-l", itb], capture_output=True, text=True).stdout
    assert "Sign algo:    sha256,rsa2048:board" in listing
    ins = invoke("inspect", itb)
    assert ins.returncode == 0 and "signature ok" in ins.stdout, ins.stderr
    # The key never leaves its directory: no file under the output (build trees, images, logs,
    # stamps) and nothing the build printed holds any line of its base64 body.
    body = [l.encode() for l in key_body_lines(keys / "board.key")]
    leaked = [p for p in every_file(out) if any(b in open(p, "rb").read() for b in body)]
    assert leaked == []
    assert not any(l.decode() in proc.stdout + proc.stderr + ins.stdout for l in body)
    # (by name too; TF-A's source tree ships Marvell's sample *.key files, which are not ours)
    assert not [p for p in every_file(out) if os.path.basename(p) in ("board.key", "board.crt")]
    # Negative control for the grep itself: a copy of the key in the output would be found.
    shutil.copy(keys / "board.key", out / "logs" / "oops.txt")
    assert [p for p in every_file(out) if any(b in open(p, "rb").read() for b in body)] == \
        [str(out / "logs" / "oops.txt")]
