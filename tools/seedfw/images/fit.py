"""FIT image: generate the .its from the entries, write it (seedfw.images.fit_stream, the bytes
`mkimage -f` writes, streamed), or for a signed image run `mkimage -f -k`.

One image node per entry, each with a sha256 hash node; one configuration (`conf-1`) naming the
first firmware entry as `firmware`, the DT fragment as `fdt`, everything else as `loadables`.
This is what U-Boot-based boards (rk3588) load.

Reproducible: the writer (and mkimage, for signed images) stamps `timestamp` (and signature
timestamps) from SOURCE_DATE_EPOCH, which we always set; the data files are referenced with relative /incbin/ paths from a work directory,
so no absolute path reaches the image.

Signing (Kconfig IMAGE_SIGN): `mkimage -k <keydir> -r` signs conf-1 with RSA-2048/SHA-256 using
<keydir>/<name>.key and .crt; `-K <pubkey.dtb>` also writes the public key into a DTB for the
verifying stage (U-Boot's control DT). Keys are never copied into the output directory.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import SeedfwError
from ..util import atomic_path, run, source_date_epoch, write_bytes, write_text
from . import fit_stream
from .entries import T_FDT, T_FIRMWARE, T_MODEL, Entry

SIGN_ALGO = "sha256,rsa2048"


def node_name(e: Entry) -> str:
    """FIT image node name: models get a prefix so a model can never shadow 'dvfs' or 'opp'."""
    return f"model-{e.name}" if e.type_id == T_MODEL else e.name


def _value(v) -> str:
    if isinstance(v, bool):
        return ""
    if isinstance(v, int):
        if v > 0xFFFFFFFF:
            return f" = <0x{v >> 32:x} 0x{v & 0xFFFFFFFF:x}>"
        return f" = <0x{v:x}>"
    if isinstance(v, (list, tuple)):
        return " = " + ", ".join(f'"{s}"' for s in v)
    return f' = "{v}"'


def make_its(entries: list[Entry], description: str, data_names: dict[str, str],
             key_name: str | None = None) -> str:
    """The .its text; data_names maps an entry name to its file (relative to the .its)."""
    lines = ["/dts-v1/;", "", "/ {", f'\tdescription = "{description}";',
             "\t#address-cells = <1>;", "", "\timages {"]
    for e in entries:
        lines.append(f"\t\t{node_name(e)} {{")
        lines.append(f'\t\t\tdescription = "{e.description}";')
        lines.append(f'\t\t\tdata = /incbin/("{data_names[e.name]}");')
        for key, val in e.fit_props().items():
            lines.append(f"\t\t\t{key}{_value(val)};")
        lines.append('\t\t\tcompression = "none";')
        lines += ["\t\t\thash-1 {", '\t\t\t\talgo = "sha256";', "\t\t\t};", "\t\t};"]
    lines += ["\t};", "", "\tconfigurations {", '\t\tdefault = "conf-1";', "\t\tconf-1 {",
              f'\t\t\tdescription = "{description}";']
    firmware = [e for e in entries if e.type_id == T_FIRMWARE]
    fdts = [e for e in entries if e.type_id == T_FDT]
    loadables = [e for e in entries if e not in firmware[:1] and e not in fdts]
    sign_images = []
    if firmware:
        lines.append(f'\t\t\tfirmware = "{node_name(firmware[0])}";')
        sign_images.append("firmware")
    if fdts:
        lines.append(f'\t\t\tfdt = "{node_name(fdts[0])}";')
        sign_images.append("fdt")
    if loadables:
        lines.append("\t\t\tloadables" + _value([node_name(e) for e in loadables]) + ";")
        sign_images.append("loadables")
    if key_name:
        lines += ["\t\t\tsignature-1 {", f'\t\t\t\talgo = "{SIGN_ALGO}";',
                  f'\t\t\t\tkey-name-hint = "{key_name}";',
                  "\t\t\t\tsign-images" + _value(sign_images) + ";", "\t\t\t};"]
    lines += ["\t\t};", "\t};", "};", ""]
    return "\n".join(lines)


def build(entries: list[Entry], target: str | Path, *, description: str,
          key_dir: str | Path | None = None, key_name: str | None = None,
          pubkey_dtb: str | Path | None = None, required: bool = True,
          partition_size: int | None = None, log: str | Path | None = None) -> Path:
    """Write the FIT at `target` (atomically) and its source next to it (`<target>.its`, for
    reading; its /incbin/ files are temporary). Signs when key_dir is given."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fit-", dir=target.parent) as tmpdir:
        return _build_in(entries, target, Path(tmpdir), description, key_dir, key_name,
                         pubkey_dtb, required, partition_size, log)


def _build_in(entries, target, work, description, key_dir, key_name, pubkey_dtb, required,
              partition_size, log):
    names = {e.name: f"{i:02d}-{e.name}.bin" for i, e in enumerate(entries)}
    signing = key_dir is not None
    if not signing:
        # Unsigned: no copies of the blobs, no mkimage (issue 33, bench/fit_pack.py); the
        # bytes are mkimage's (tests/test_fit_stream.py).
        text = make_its(entries, description, names)
        write_text(target.with_name(target.name + ".its"), text)  # door: the .its this build wrote
        data = {names[e.name]: e.data for e in entries}
        root = fit_stream.parse_its(text, target.name + ".its", resolve=data.__getitem__)
        with atomic_path(target) as tmp:
            size = fit_stream.write(root, tmp, source_date_epoch())
            _check_size(size, partition_size, target)
        if log:
            with open(log, "a") as f:
                f.write(f"seedfw fit_stream: {target} {size} bytes\n")
        return target
    if not shutil.which("mkimage"):
        raise SeedfwError("mkimage not found (u-boot-tools; run 'invoke setup')")
    for e in entries:
        write_bytes(work / names[e.name], e.data)
    if signing:
        key_name = key_name or "dev"
        key_dir = Path(key_dir).resolve()
        for ext in (".key", ".crt"):
            if not (key_dir / f"{key_name}{ext}").is_file():
                raise SeedfwError(f"signing key '{key_name}{ext}' not found in {key_dir}",
                                  key_dir, "IMAGE_SIGN_KEY_DIR")
    its = work / "image.its"
    write_text(its, make_its(entries, description, names, key_name if signing else None))
    write_text(target.with_name(target.name + ".its"), its.read_text())  # door: the .its this build wrote
    env = {"SOURCE_DATE_EPOCH": str(source_date_epoch())}
    log = Path(log).resolve() if log else work / "mkimage.log"
    with atomic_path(target) as tmp:
        cmd = ["mkimage", "-f", its.name]
        if signing:
            cmd += ["-k", str(key_dir)]
            if pubkey_dtb is not None:
                pubkey_dtb = Path(pubkey_dtb).resolve()
                if not pubkey_dtb.exists():  # mkimage adds the key to an existing DTB
                    src = work / "pubkey.dts"
                    write_text(src, "/dts-v1/;\n/ {\n};\n")
                    run(["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", pubkey_dtb, src], log=log)
                cmd += ["-K", str(pubkey_dtb)]
            if required:
                cmd += ["-r"]
        cmd.append(str(tmp.resolve()))
        run(cmd, cwd=work, env=env, log=log)
        _check_size(tmp.stat().st_size, partition_size, target)
    return target


def _check_size(size, partition_size, target):
    if partition_size is not None and size > partition_size:
        raise SeedfwError(f"FIT image is {size} bytes, over the partition limit of "
                          f"{partition_size} bytes (0x{partition_size:x})", target)
