"""Security tasks: fuzz (libFuzzer campaigns on the boot-time C parsers), keys (FIT signing keys)."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

from .. import util
from . import command
from ..paths import shown as shown_path
from ..errors import SeedfwError

__all__ = ["fuzz", "keys"]


@command(name="fuzz", iterable=["seed_from"], help={
    "target": "what to fuzz: lz4-block, lz4-container, pkg (C, libFuzzer) or py-* (the Python "
              "readers, atheris; see --list)",
    "runs": "py-* targets: stop after this many executions (default 1000000; 0 = --seconds)",
    "seconds": "how long to run (default 10)",
    "jobs": "parallel libFuzzer workers sharing the corpus (default 1)",
    "corpus": "corpus directory to grow and reuse (default output/fuzz/<target>/corpus)",
    "list": "list the targets and exit",
    "max_len": "longest input libFuzzer tries (default: the target's own limit)",
    "seed_from": "build output directory whose images/*.elf and *-boot.pkg seed the corpus "
                 "(repeatable; default: every board under output/)",
})
def fuzz(c, target=None, seconds=10, jobs=1, corpus=None, list_=False, max_len=0, seed_from=None,
         runs=1000000):
    """Build and run a fuzzer of a parser of outside bytes.

    Build a libFuzzer target (clang-14, ASan+UBSan), seed it from real data, run it, report;
    py-* targets fuzz the Python readers of outside bytes with atheris (seedfw.fuzz.pyfuzz)."""
    from .. import fuzz as fuzz_mod

    if list_:
        for t in fuzz_mod.TARGETS.values():
            print(f"{t.name:<14} {t.source:<38} {t.what}")
        from ..fuzz import pyfuzz
        for name in pyfuzz.TARGETS:
            print(f"{name:<14} {'tools/seedfw/fuzz/pyfuzz.py':<38} Python reader (atheris)")
        return
    if not target:
        raise SeedfwError("no --target given (see 'invoke fuzz --list')", field="--target")
    if str(target).startswith("py-"):
        from ..fuzz import pyfuzz
        r = pyfuzz.run_campaign(target, int(runs), int(seconds) if not int(runs) else 0)
        print(f"{r.target}: {r.executions} executions in {r.seconds:.1f} s, {len(r.crashes)} "
              f"crashes (log: {shown_path(r.log)})")
        if r.crashes:
            raise SeedfwError(f"fuzzer found a crash, kept in tests/hostile_crashes/{target}/",
                              shown_path(r.crashes[0]), "crash artifact")
        if r.executions == 0:
            raise SeedfwError("atheris ran no inputs", r.log)
        return
    r = fuzz_mod.run_campaign(target, int(seconds), jobs=int(jobs), corpus=corpus,
                              max_len=int(max_len) or None, seed_from=seed_from or ())
    print(f"{r.target}: {r.executions} executions in {r.seconds:.1f} s, {r.exec_per_sec} exec/s, "
          f"{r.new_units} new units, corpus {r.corpus_files} files, {len(r.crashes)} crashes "
          f"(log: {shown_path(r.log)})")
    if r.crashes:
        why = fuzz_mod.first_finding(r.log) or "see the log"
        raise SeedfwError(f"fuzzer found a crash: {why}; reproduce: "
                          f"{shown_path(r.binary)} {shown_path(r.crashes[0])}",
                          shown_path(r.crashes[0]), "crash artifact")
    if r.executions == 0:
        raise SeedfwError("libFuzzer ran no inputs", r.log)


def public_key_fingerprint(key_file: str | Path) -> str:
    """SHA256:<base64> of the DER SubjectPublicKeyInfo (the same form ssh-keygen -l shows)."""
    der = util.openssl(["pkey", "-in", str(key_file), "-pubout", "-outform", "DER"], "pkey")
    return "SHA256:" + base64.b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")


def new_keys(directory: str | Path, name: str = "dev", bits: int = 2048) -> dict[str, Path]:
    """Create <dir>/<name>.key (RSA, mode 0600) and <dir>/<name>.crt (self-signed), the pair
    mkimage -k <dir> signs with. Refuses to overwrite either file."""
    directory = Path(directory)
    if not name or "/" in name or name.startswith("."):
        raise SeedfwError(f"key name '{name}' must be a plain file name", field="--name")
    if int(bits) not in (2048, 3072, 4096):
        # mkimage's rsa verifier supports these sizes (sha256,rsa2048/3072/4096)
        raise SeedfwError(f"{bits} bits: mkimage signs with RSA 2048, 3072 or 4096", field="--bits")
    key, crt = directory / f"{name}.key", directory / f"{name}.crt"
    for p in (key, crt):
        if p.exists():
            raise SeedfwError("already exists; not overwriting a key (choose another --name or "
                              "directory)", p)
    directory.mkdir(parents=True, exist_ok=True)
    tmp_key = directory / f".{name}.key.tmp"
    # Create the file 0600 *before* openssl writes key bytes into it: no window where another
    # user could read it under a default umask.
    fd = os.open(tmp_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    try:
        util.openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", f"rsa_keygen_bits:{int(bits)}",
                  "-out", str(tmp_key)], "genpkey")
        os.chmod(tmp_key, 0o600)
        tmp_crt = directory / f".{name}.crt.tmp"
        util.openssl(["req", "-batch", "-new", "-x509", "-days", "3650", "-sha256",
                  "-subj", f"/CN=seedfw {name}", "-key", str(tmp_key), "-out", str(tmp_crt)], "req")
        os.replace(tmp_crt, crt)
        os.replace(tmp_key, key)
    finally:
        for p in (tmp_key, directory / f".{name}.crt.tmp"):
            p.unlink(missing_ok=True)
    return {"key": key, "crt": crt}


@command(name="keys", help={
    "new": "directory to create the key pair in (created if missing; existing keys are kept)",
    "name": "key name: <dir>/<name>.key and <name>.crt, = CONFIG_IMAGE_SIGN_KEY_NAME (default dev)",
    "bits": "RSA modulus size: 2048 (default), 3072 or 4096",
})
def keys(c, new=None, name="dev", bits=2048):
    """Create an RSA key pair and certificate for FIT signing.

    Create an RSA key pair and self-signed certificate for signing FIT images (mkimage -k)."""
    if not new:
        raise SeedfwError("give the directory for the new key pair: --new DIR", field="--new")
    paths = new_keys(new, name, int(bits))
    print(f"private key: {paths['key']} (mode 0600; keep it out of the tree and of outputs)")
    print(f"certificate: {paths['crt']}")
    print(f"public key fingerprint: {public_key_fingerprint(paths['key'])}")
    print(f'use: CONFIG_IMAGE_SIGN=y, CONFIG_IMAGE_SIGN_KEY_DIR="{Path(new).resolve()}", '
          f'CONFIG_IMAGE_SIGN_KEY_NAME="{name}"')
