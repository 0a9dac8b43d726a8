"""`invoke inspect` for what updates add: a U-Boot env image, a RAUC bundle, a disk's slots.

Called by seedfw.images.inspect before its own formats (a bundle's --key is a PEM CA, not a
public-key DTB) and after a GPT disk's rows. Same Report/Row shape as every other format.

  env     no magic exists: a file is an env when its first 4 bytes are the CRC-32 of the rest,
          or when it is named like one (uboot.env, *-env.bin) — then a wrong CRC is a failing
          row (U-Boot's "bad CRC"), not "unknown format"
  bundle  squashfs ("hsqs") + CMS signature + its size (8 bytes, big-endian) at the end. The
          signed manifest is read out of the CMS by `openssl cms` (bounded: the signature is at
          most SIG_CAP bytes); with --key CA.pem the signature is verified against that CA,
          else only listed. Each image's sha256 is recomputed through the host's unsquashfs
          (seedfw.update.hosttool) when it is set up, else the image is only listed.
  disk    the slots (rootfs.0, rootfs.1, data) and where the env is: a "uboot-env" partition
          (qemu: FAT, not decoded here) or the raw env at 14 MiB (sd-emmc), CRC checked.
"""

from __future__ import annotations

import hashlib
import subprocess
import tempfile
from pathlib import Path

from ..errors import SeedfwError
from .. import reading
from . import env as env_mod
from . import slots

SIG_CAP = 1 << 20
ENV_NAMES = ("uboot.env", "uboot-env.bin")
SQUASHFS = b"hsqs"


def recognises(view, path: Path) -> str | None:
    if view.peek(0, 4) == SQUASHFS and len(view) > 8 + 96:
        return "bundle"
    name = Path(path).name
    if name in ENV_NAMES or name.endswith("-env.bin") or env_mod.looks_like_env(view) or \
            env_mod.looks_like_env(view, redundant=True):
        return "env"
    return None


def inspect(path: Path, view, kind: str, keyring, report_cls, row_cls):
    if kind == "env":
        report = report_cls(path, "u-boot env")
        env_rows(report, row_cls, view, "env", 0)
        if keyring is not None:
            report.rows.append(row_cls("signature", "signature", 0, 0, "none", False,
                                       "--key given, but a U-Boot environment carries no "
                                       "signature: nothing to verify"))
        return report
    return bundle_report(path, view, keyring, report_cls, row_cls)


def env_rows(report, row_cls, view, name: str, at: int) -> None:
    try:
        try:
            e = env_mod.decode(view, view.source)
        except SeedfwError as first:
            if first.field != "crc":
                raise
            try:                        # a redundant copy: flag byte, CRC over what follows it
                e = env_mod.decode(view, view.source, redundant=True)
            except SeedfwError:
                raise first from None
    except SeedfwError as exc:
        report.rows.append(row_cls(name, "u-boot env", len(view), len(view), "crc32", False,
                                   exc.message, verdict="bad CRC" if exc.field == "crc" else ""))
        return
    boot = {k: v for k, v in e.vars.items() if k == "BOOT_ORDER" or
            (k.startswith("BOOT_") and k.endswith("_LEFT"))}
    report.rows.append(row_cls(name, "u-boot env", e.size, e.size, "crc32", True,
                               f"at 0x{at:x}, {len(e.vars)} variables, CRC 0x{e.crc:08x}"
                               + (f", redundant copy flag {e.flag}" if e.redundant else "")))
    for k, v in e.vars.items():
        report.rows.append(row_cls(f"{name}:{reading.plain(k)}", "variable", len(v), len(v), "-",
                                   True, reading.plain(v[:120]), checked=False))
    if boot:
        report.notes.append("boot counting: " + ", ".join(f"{k}={reading.plain(v)}"
                                                          for k, v in boot.items()))


def _trailer(view) -> tuple[int, int]:
    n = len(view)
    sig = int.from_bytes(view.bytes(n - 8, 8, "signature size"), "big")
    if sig <= 0 or sig > SIG_CAP or sig > n - 8 - 96:
        view.fail("signature size", f"RAUC bundle: signature size {sig} does not fit the "
                                    f"{n} bytes (at most {SIG_CAP})")
    return n - 8 - sig, sig


def _cms(sig: bytes, keyring) -> tuple[str, bool | None, str]:
    """(manifest text, verified?, openssl's reason). verified None: no keyring given. The
    manifest is read without verification first, so a refused bundle still shows what it says."""
    def run(p, verify):
        args = ["openssl", "cms", "-verify", "-inform", "DER", "-in", str(p), "-binary"]
        args += ["-CAfile", str(keyring), "-purpose", "any"] if verify else ["-noverify"]
        return subprocess.run(args, capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "sig.der"
        p.write_bytes(sig)
        proc = run(p, False)
        checked = run(p, True) if keyring is not None and proc.returncode == 0 else None
    bad = checked if checked is not None and checked.returncode != 0 else proc
    lines = bad.stderr.decode(errors="replace").strip().splitlines() or [""]
    # "…:Verify error: unable to get local issuer certificate" → its last clause
    reason = lines[-1].rsplit(":", 1)[-1].strip() if bad.returncode else ""
    if proc.returncode != 0:
        return "", False, reason
    text = proc.stdout[:SIG_CAP].decode("utf-8", "replace")
    return text, None if checked is None else checked.returncode == 0, reason


def parse_manifest(text: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    section = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = out.setdefault(line[1:-1], {})
        elif "=" in line and section is not None:
            k, _, v = line.partition("=")
            section[k.strip()] = v.strip()
    return out


def bundle_report(path, view, keyring, report_cls, row_cls):
    report = report_cls(path, "rauc bundle")
    payload, sig_size = _trailer(view)
    text, verified, last = _cms(view.bytes(payload, sig_size, "signature"), keyring)
    if not text:
        report.rows.append(row_cls("signature", "cms", sig_size, sig_size, "signature", False,
                                   f"not a CMS signature openssl reads: {reading.plain(last)}"))
        return report
    man = parse_manifest(text)
    upd, bun = man.get("update", {}), man.get("bundle", {})
    if verified is None:
        report.rows.append(row_cls("signature", "cms", sig_size, sig_size, "signature", True,
                                   "not verified (give --key CA.pem to check it)", checked=False))
    else:
        report.rows.append(row_cls("signature", "cms", sig_size, sig_size, "signature", verified,
                                   "verified against " + Path(keyring).name if verified else
                                   f"refused: {reading.plain(last)}"))
    report.rows.append(row_cls("manifest", "manifest", len(text), len(text), "-", True,
                               f"compatible {reading.plain(upd.get('compatible', '?'))}, version "
                               f"{reading.plain(upd.get('version', '?'))}, format "
                               f"{reading.plain(bun.get('format', 'plain'))}", checked=False))
    for section, fields in man.items():
        if not section.startswith("image."):
            continue
        name = reading.plain(fields.get("filename", section))
        size = int(fields.get("size", "0") or 0) if fields.get("size", "0").isdigit() else 0
        want = fields.get("sha256", "")
        got = _image_sha256(path, fields.get("filename", ""), payload)
        detail = f"slot class {reading.plain(section[6:])}"
        if fields.get("adaptive"):
            detail += f", adaptive {reading.plain(fields['adaptive'])}"
        if got is None:
            report.rows.append(row_cls(name, "rauc image", size, size, "sha256", True,
                                       detail + " (not checked: run 'invoke setup' for the "
                                                "host's unsquashfs)", checked=False))
        else:
            report.rows.append(row_cls(name, "rauc image", size, size, "sha256", got == want,
                                       detail if got == want else detail + f", sha256 {got[:16]} "
                                       f"is not the manifest's {want[:16]}"))
    report.notes.append(f"squashfs payload {payload:,} bytes, CMS signature {sig_size:,} bytes")
    return report


def _image_sha256(path: Path, member: str, payload: int) -> str | None:
    from . import hosttool
    if not member or "/" in member or not (hosttool.tree() / hosttool.MARK).is_file():
        return None
    dest = hosttool.tree()
    cmd = [str(dest / "usr/bin/unsquashfs"), "-cat", str(path), member]
    h = hashlib.sha256()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          env=hosttool.environment(dest)) as proc:
        for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest() if proc.returncode == 0 else "unreadable"


def disk_rows(report, row_cls, view) -> None:
    """Slots and env of a GPT disk image (after seedfw.images.boot_inspect's rows)."""
    from ..images import gpt
    try:
        table = gpt.parse(view, view.source)
    except SeedfwError:
        return
    names = {p.name: p for p in table.partitions}
    found = [n for n in slots.partition_names() if n in names]
    if found:
        report.notes.append("update slots: " + ", ".join(
            f"{n} {names[n].size >> 20} MiB PARTUUID {names[n].guid}" for n in found))
    if "uboot-env" in names:
        report.notes.append(f"U-Boot env: partition uboot-env (FAT, "
                            f"{names['uboot-env'].size >> 10} KiB)")
    for raw in slots.raw_places():            # board.yaml update.env, every board's
        for i, at in enumerate((raw.offset, raw.redundant_offset)):
            if at is not None and view.has(at, raw.size) and view.peek(at, 4) != b"\0\0\0\0":
                sub = view.sub(at, raw.size, f"offset 0x{at:x}", "U-Boot env")
                env_rows(report, row_cls, reading.View(sub.memory(), source=view.source,
                                                       what="U-Boot env"), f"env{i}", at)
