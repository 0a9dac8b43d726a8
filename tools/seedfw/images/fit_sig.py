"""Verify a FIT configuration signature against a public-key DTB (what `mkimage -K` writes and
U-Boot's control DT carries), without U-Boot's fit_check_sign (Debian does not ship it).

What a config signature covers (U-Boot's documented FIT signature scheme, doc/usage/fit/
signature.rst): the structure-block regions of the nodes listed in the signature's `hashed-nodes`
property — each listed node's begin/end tags and properties except `data`; the begin/end tags of
unlisted direct children of a listed node; every NOP inside a listed node; the FDT_END tag — and
the first `hashed-strings` bytes of the strings block. The regions are concatenated in file order,
hashed with SHA-256 and compared with the RSA PKCS#1 v1.5 signature in `value`.

Images themselves are covered through their hash nodes (which are listed), so the per-image hash
check in inspect.py completes the chain.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from ..errors import SeedfwError
from . import fdt
from ..reading import CAPS

# DER prefix of DigestInfo for SHA-256 (RFC 8017, section 9.2, note 1).
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
EXCLUDED_PROPS = {"data"}


def signed_bytes(blob: bytes, hashed_nodes: list[str], strings_size: int) -> bytes:
    """The bytes a config signature covers (see the module docstring)."""
    # Called after fdt.parse() accepted the blob, so the header and block bounds hold; names
    # are still decoded leniently and every read is bounded, so a damaged blob only makes the
    # signature fail (never an exception other than SeedfwError).
    _magic, _total, off_struct, off_strings, _rsv, _ver, _last, _boot, size_strings, size_struct = \
        struct.unpack_from(">10I", blob)
    wanted = set(hashed_nodes)
    out = bytearray()
    pos = off_struct
    end = off_struct + size_struct
    path: list[str] = []
    # level per open node: 2 = listed node (tags and props), 1 = direct child of a listed node
    # (tags only), 0 = not covered.
    levels: list[int] = []
    level = 0

    def cstr(at: int, limit: int) -> tuple[str, int]:
        stop = blob.find(b"\0", at, limit)
        if stop < 0:
            raise SeedfwError(f"damaged FDT: unterminated name at 0x{at:x}")
        return blob[at:stop].decode(errors="replace"), stop

    while pos + 4 <= end:
        (token,) = struct.unpack_from(">I", blob, pos)
        start = pos
        pos += 4
        if token == fdt.BEGIN_NODE:
            name, stop = cstr(pos, end)
            pos = (stop + 4) & ~3
            path.append(name)
            node_path = "/" + "/".join(p for p in path if p)
            levels.append(level)
            level = 2 if node_path in wanted else max(level - 1, 0)
            if level:
                out += blob[start:pos]
        elif token == fdt.END_NODE:
            if not levels:
                raise SeedfwError(f"damaged FDT: END_NODE without a node at 0x{start:x}")
            if level:
                out += blob[start:pos]
            level = levels.pop()
            path.pop()
        elif token == fdt.PROP:
            if pos + 8 > end:
                raise SeedfwError(f"damaged FDT: property header past the block at 0x{start:x}")
            length, name_off = struct.unpack_from(">II", blob, pos)
            pos = (pos + 8 + length + 3) & ~3
            name, _ = cstr(off_strings + name_off, off_strings + size_strings)
            if level >= 2 and name not in EXCLUDED_PROPS:
                out += blob[start:pos]
        elif token == fdt.NOP:
            if level >= 2:
                out += blob[start:pos]
        elif token == fdt.END:
            out += blob[start:pos]
            break
        else:
            raise SeedfwError(f"unknown FDT token {token} at 0x{start:x}")
    if strings_size > size_strings:
        raise SeedfwError("hashed-strings is larger than the strings block")
    out += blob[off_strings:off_strings + strings_size]
    return bytes(out)


def load_keys(pubkey_dtb: bytes, source="public key DTB") -> dict[str, tuple[int, int]]:
    """{key-name: (modulus, exponent)} from a U-Boot public-key DTB's /signature node."""
    root = fdt.parse(pubkey_dtb, source)
    sig = root.children.get("signature")
    if sig is None:
        raise SeedfwError("no /signature node (not a public-key DTB written by mkimage -K)", source)
    keys = {}
    for name, node in sig.children.items():
        if "rsa,modulus" not in node.props:
            continue
        raw_mod = bytes(node.props["rsa,modulus"])
        # An 8 KiB modulus made one check take > 30 s: RSA keys over CAPS rsa_bits are refused
        # (U-Boot supports 2048..4096), and so are exponents over 32 bits (U-Boot's is u64,
        # mkimage writes 65537).
        if len(raw_mod) * 8 > CAPS["rsa_bits"]:
            raise SeedfwError(f"RSA modulus of {len(raw_mod) * 8} bits is over the limit of "
                              f"{CAPS['rsa_bits']}", source, f"/signature/{name}/rsa,modulus")
        modulus = int.from_bytes(raw_mod, "big")
        raw_exp = bytes(node.props.get("rsa,exponent", b""))
        exponent = int.from_bytes(raw_exp, "big") if raw_exp else 65537
        if exponent >= 1 << 32:
            raise SeedfwError("RSA exponent over 32 bits", source,
                              f"/signature/{name}/rsa,exponent")
        keys[node.str("key-name-hint") or name.removeprefix("key-")] = (modulus, exponent or 65537)
    return keys


def rsa_pkcs1_sha256_ok(message: bytes, signature: bytes, modulus: int, exponent: int) -> bool:
    k = (modulus.bit_length() + 7) // 8
    if modulus.bit_length() > CAPS["rsa_bits"] or exponent >= 1 << 32:
        return False                 # bounded time whatever key a caller passes
    if modulus < 3 or len(signature) != k or k < len(SHA256_DIGEST_INFO) + 32 + 11:
        return False
    em = pow(int.from_bytes(signature, "big"), exponent, modulus).to_bytes(k, "big")
    digest_info = SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
    expected = b"\x00\x01" + b"\xff" * (k - len(digest_info) - 3) + b"\x00" + digest_info
    return em == expected


def verify_config(blob: bytes, conf: fdt.Node, keys: dict[str, tuple[int, int]]) -> list[tuple]:
    """[(signature node name, key name, ok, reason)] for each signature node of a configuration."""
    results = []
    for name, sig in conf.children.items():
        if not name.startswith("signature"):
            continue
        key_name = sig.str("key-name-hint", "")
        algo = sig.str("algo", "")
        if algo != "sha256,rsa2048" and not algo.startswith("sha256,rsa"):
            results.append((name, key_name, False, f"unsupported algo {algo}"))
            continue
        if key_name not in keys:
            results.append((name, key_name, False, f"no key '{key_name}' in the public-key DTB"))
            continue
        hashed = sig.strings("hashed-nodes")
        strings = sig.props.get("hashed-strings", b"")
        if not hashed or len(strings) < 8:
            results.append((name, key_name, False, "no hashed-nodes/hashed-strings"))
            continue
        message = signed_bytes(blob, hashed, struct.unpack(">II", bytes(strings[:8]))[1])
        ok = rsa_pkcs1_sha256_ok(message, bytes(sig.props.get("value", b"")), *keys[key_name])
        results.append((name, key_name, ok, "signature ok" if ok else "signature BAD"))
    return results


def keys_from_cert(cert: str | Path, key_name: str) -> dict[str, tuple[int, int]]:
    """{key_name: (modulus, exponent)} from the X.509 certificate mkimage signs with
    (<IMAGE_SIGN_KEY_DIR>/<name>.crt). Only the public half is read (openssl x509 -pubkey)."""
    import subprocess

    try:
        proc = subprocess.run(["openssl", "x509", "-in", str(cert), "-noout", "-pubkey"],
                              capture_output=True)
        pub = subprocess.run(["openssl", "rsa", "-pubin", "-noout", "-text"], input=proc.stdout,
                             capture_output=True)
    except FileNotFoundError:
        raise SeedfwError("openssl not found (apt package openssl)") from None
    text = pub.stdout.decode(errors="replace")
    if proc.returncode or pub.returncode or "Modulus:" not in text:
        raise SeedfwError("not a readable X.509 certificate with an RSA key", cert)
    hex_lines = text.split("Modulus:", 1)[1].split("Exponent:", 1)[0]
    modulus = int("".join(hex_lines.split()).replace(":", ""), 16)
    exponent = int(text.split("Exponent:", 1)[1].split()[0])
    return {key_name: (modulus, exponent)}
