"""`invoke bundle`: a signed RAUC bundle of a build's rootfs, checked with `rauc info` after.

What goes in (docs/updates.md):
  manifest.raucm  [update] compatible = the build's UPDATE_COMPATIBLE (default seedfw-<board>),
                  version = the build id, build = the build id; [bundle] format=verity (the
                  kernel checks every payload block against a hash tree the signature covers,
                  so a flipped bit is refused while reading, not after installing it);
                  [image.rootfs] filename=rootfs.ext4, adaptive=block-hash-index (RAUC 1.8+
                  writes a hash per 4 KiB block; the target then reads only the blocks its
                  other slot lacks)
  rootfs.ext4     images/rootfs.ext4 of the build, as the disk image's slot holds it

Refused before anything is signed, each one line naming the file and field:
  * --board other than the board the output directory was built for (manifest.json board),
  * a rootfs whose /etc/rauc/system.conf (when the build has UPDATE_RAUC) names another compatible
    than the bundle would carry — RAUC would refuse it on every device,
  * a rootfs image that is not a whole number of 4 KiB blocks (block-hash-index needs it).
After `rauc bundle`, `rauc info --keyring` reads the bundle back with the CA the devices trust;
the bundle is only moved to its place when that accepts it.

Key material never reaches the output or a log: the signing key's path is passed to rauc as an
argument and never printed; what is printed and recorded (bundle.json) is the signer's subject and
the keyring's SHA-256 fingerprint.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .. import paths, util
from ..errors import SeedfwError
from . import hosttool, keys

BLOCK = 4096


def manifest_text(compatible: str, build_id: str, board: str) -> str:
    return "\n".join([
        "[update]", f"compatible={compatible}", f"version={build_id}",
        f"description=seedfw {board} rootfs", f"build={build_id}", "",
        "[bundle]", "format=verity", "",
        "[image.rootfs]", "filename=rootfs.ext4", "adaptive=block-hash-index", ""])


def build_facts(board: str, outdir: Path) -> dict:
    """board, build id and compatible of the build in `outdir`; a wrong --board is refused."""
    from ..manifest import Manifest
    manifest = Manifest.load(outdir, missing=f"no build here (run 'invoke build --board {board}' "
                                              "first)")
    man, data = manifest.path, manifest.doc
    built = data.get("board")
    if built != board:
        raise SeedfwError(f"this output was built for board '{built}', not '{board}': a bundle "
                          f"for another board is refused", man, "board")
    build_id = data.get("build_id")
    if not isinstance(build_id, str) or not build_id:
        raise SeedfwError("the build manifest has no build id", man, "build_id")
    from ..config import load_values
    values = load_values(outdir)
    compatible = values.get("UPDATE_COMPATIBLE") or f"seedfw-{board}"
    return {"board": board, "build_id": build_id, "compatible": compatible,
            "update": bool(values.get("UPDATE_RAUC"))}


def rootfs_compatible(rootfs: Path) -> str | None:
    """[system] compatible of /etc/rauc/system.conf inside the ext4 image, None without one."""
    if not shutil.which("debugfs"):
        return None
    proc = subprocess.run(["debugfs", "-R", "cat /etc/rauc/system.conf", str(rootfs)],
                          capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("compatible="):
            return line.split("=", 1)[1].strip()
    return None


def make(board: str, output=None, key=None, cert=None, keyring=None, dest=None,
         say=print) -> dict:
    """Write the bundle; returns its record (also written beside it as <name>.json)."""
    outdir = paths.output_dir(board, output)
    facts = build_facts(board, outdir)
    rootfs = outdir / "images" / "rootfs.ext4"
    if not rootfs.is_file():
        raise SeedfwError("the build has no rootfs image (CONFIG_BUILDROOT_ROOTFS_EXT4)", rootfs)
    size = rootfs.stat().st_size
    if size % BLOCK:
        raise SeedfwError(f"{size} bytes is not a whole number of {BLOCK}-byte blocks "
                          "(adaptive=block-hash-index needs them)", rootfs, "size")
    inside = rootfs_compatible(rootfs)
    if inside is not None and inside != facts["compatible"]:
        raise SeedfwError(f"the rootfs's system.conf says compatible '{inside}', the bundle "
                          f"would say '{facts['compatible']}': every device would refuse it",
                          rootfs, "/etc/rauc/system.conf")
    pair = keys.chosen(key, cert, keyring)
    dest = Path(dest) if dest else outdir / "bundle" / f"{board}-{facts['build_id']}.raucb"
    work = outdir / "build" / "bundle"
    if work.exists():
        shutil.rmtree(work)
    content = work / "content"
    content.mkdir(parents=True)
    # rauc writes rootfs.ext4.block-hash-index beside the image: a copy, never the build's file
    util.copy_file(rootfs, content / "rootfs.ext4")
    (content / "manifest.raucm").write_text(manifest_text(facts["compatible"],
                                                          facts["build_id"], board))
    tmp = work / "out.raucb"
    hosttool.run(["rauc", "bundle", f"--cert={pair.cert}", f"--key={pair.key}",
                  str(content), str(tmp)])
    info = read_info(tmp, pair.keyring)
    if info.get("compatible") != facts["compatible"]:
        raise SeedfwError(f"rauc info reads compatible '{info.get('compatible')}', not "
                          f"'{facts['compatible']}'", tmp, "compatible")
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, dest)
    record = {"bundle": dest.name, "size": dest.stat().st_size,
              "sha256": util.sha256_file(dest), "compatible": facts["compatible"],
              "version": facts["build_id"], "format": "verity",
              "adaptive": "block-hash-index", "rootfs_size": size,
              "signer": info.get("signer", ""),
              "keyring_sha256": keys.fingerprint(pair.keyring),
              "key": "development (this checkout)" if not key else "given (--key/--cert)",
              "update_in_build": facts["update"]}
    util.write_json(dest.with_suffix(".json"), record)
    shutil.rmtree(work)
    return record


def read_info(bundle: Path, keyring: Path) -> dict:
    """`rauc info --keyring` of a bundle as {compatible, version, format, images, signer};
    RAUC's own error line when it refuses (wrong key, damaged signature). The text output, not
    --output-format=json: 1.8's JSON leaves out the bundle format and the signer."""
    proc = hosttool.run(["rauc", f"--keyring={keyring}", "info", str(bundle)], check=False)
    if proc.returncode != 0:
        raise SeedfwError(f"rauc info refused the bundle: {hosttool.last_error(proc.stderr)}",
                          bundle)
    return parse_info(proc.stdout)


def parse_info(text: str) -> dict:
    out: dict = {"images": []}
    for raw in text.splitlines():
        line = raw.strip()
        key, _, value = line.partition(":")
        value = value.strip().strip("'")
        if key == "Compatible":
            out["compatible"] = value
        elif key == "Version":
            out["version"] = value
        elif key == "Bundle Format":
            out["format"] = value
        elif key == "Filename":
            out["images"].append({"filename": value})
        elif key in ("Checksum", "Size", "Adaptive") and out["images"]:
            out["images"][-1][key.lower()] = value
        elif key == "0 Subject" and "signer" not in out:
            out["signer"] = value
    return out
