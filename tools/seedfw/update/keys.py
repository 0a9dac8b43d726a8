"""The development CA and signing key of this checkout, made on first use.

Where: <seedfw cache>/update-keys/<checkout id>/ (mode 0700), the checkout id being the first 12
hex digits of sha256(the checkout's absolute path). Why not the output dir: `invoke clean` would
lose the key that signed what devices in the field trust, and an output dir is what people hand
around (CI artifacts, bug reports). Why not the tree: it would be one `git add -A` from being
committed. Why per checkout and not per user: two checkouts are two products in development; a
bundle of one must not install on a device flashed from the other.

Files: ca.crt (the keyring a device trusts, copied into the rootfs as /etc/rauc/keyring.pem),
ca.key, signer.crt (issued by the CA) and signer.key. Private keys are created 0600 before
openssl writes a byte into them; nothing here ever prints or logs key material — openssl's
stderr is reduced to its last line (it never carries key bytes), and the paths of the private
keys are the only thing messages name. Real keys: `invoke bundle --key K --cert C` and
CONFIG_UPDATE_KEYRING for the CA; seedfw then never makes or reads the development pair.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import paths, util
from ..errors import SeedfwError


@dataclass(frozen=True)
class KeyPair:
    key: Path
    cert: Path
    keyring: Path          # the CA certificate a device trusts


def checkout_id(root: Path | None = None) -> str:
    return hashlib.sha256(str((root or paths.ROOT).resolve()).encode()).hexdigest()[:12]


def dev_dir(root: Path | None = None) -> Path:
    return paths.cache_dir() / "update-keys" / checkout_id(root)


def _private(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.close(fd)


def development(root: Path | None = None) -> KeyPair:
    """This checkout's development pair, made (CA, then a signer it issues) when missing."""
    d = dev_dir(root)
    pair = KeyPair(d / "signer.key", d / "signer.crt", d / "ca.crt")
    if all(p.is_file() for p in (pair.key, pair.cert, pair.keyring)):
        return pair
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o700)
    tmp = d / f".new-{os.getpid()}"
    tmp.mkdir(mode=0o700)
    try:
        for k in ("ca.key", "signer.key"):
            _private(tmp / k)
        ext = tmp / "ext.cnf"
        ext.write_text("[signer]\nbasicConstraints=critical,CA:FALSE\n"
                       "keyUsage=critical,digitalSignature\n")
        subject = f"/O=seedfw development/CN=seedfw update CA {checkout_id(root)}"
        util.openssl(["req", "-batch", "-x509", "-newkey", "rsa:3072", "-nodes", "-sha256",
                  "-days", "3650", "-subj", subject, "-keyout", str(tmp / "ca.key"),
                  "-out", str(tmp / "ca.crt"), "-config", "/dev/null",
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign"], "req (CA)")
        util.openssl(["req", "-batch", "-new", "-newkey", "rsa:3072", "-nodes", "-sha256",
                  "-subj", f"/O=seedfw development/CN=seedfw update signer {checkout_id(root)}",
                  "-keyout", str(tmp / "signer.key"), "-out", str(tmp / "signer.csr"),
                  "-config", "/dev/null"], "req (signer)")
        util.openssl(["x509", "-req", "-in", str(tmp / "signer.csr"), "-CA", str(tmp / "ca.crt"),
                  "-CAkey", str(tmp / "ca.key"), "-set_serial", "2", "-days", "3650",
                  "-sha256", "-extfile", str(ext), "-extensions", "signer",
                  "-out", str(tmp / "signer.crt")], "x509 (signer)")
        for name in ("ca.key", "ca.crt", "signer.key", "signer.crt"):
            os.replace(tmp / name, d / name)
    finally:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    return pair


def chosen(key=None, cert=None, keyring=None, root: Path | None = None) -> KeyPair:
    """--key/--cert (both or neither) or the development pair; keyring: the CA to check with."""
    if bool(key) != bool(cert):
        raise SeedfwError("give both --key and --cert (or neither, for this checkout's "
                          "development key)", field="--cert" if key else "--key")
    if key:
        for p, f in ((Path(key), "--key"), (Path(cert), "--cert")):
            if not p.is_file():
                raise SeedfwError("file not found", p, f)
        ring = Path(keyring) if keyring else Path(cert)
        return KeyPair(Path(key), Path(cert), ring)
    dev = development(root)
    return KeyPair(dev.key, dev.cert, Path(keyring) if keyring else dev.keyring)


def fingerprint(cert: Path) -> str:
    proc = subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-fingerprint",
                           "-sha256"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SeedfwError("not a PEM certificate", cert)
    return proc.stdout.strip().split("=", 1)[-1]
