"""Read a FIT or a boot package back, verify every hash, describe every entry.

The format is recognised by its magic (FDT 0xd00dfeed → FIT, "SPKG" → boot package). FIT images
are parsed with our own FDT reader (fdt.py) so the hashes are recomputed from the bytes, not taken
from a tool's printout. Configuration signatures are verified (fit_sig.py) when a public-key DTB
is given (what `mkimage -K` wrote); without one they are only reported.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .. import dvfs, models
from ..errors import SeedfwError
from . import fdt, fit_sig, package
from .entries import F_ENCRYPTED, F_LZ4, MODEL_SUBTYPES, T_DVFS, T_MODEL

HASH_ALGOS = {"sha256": hashlib.sha256, "sha1": hashlib.sha1, "md5": hashlib.md5}


@dataclass
class Row:
    name: str
    type: str
    size: int                 # uncompressed size
    stored_size: int          # bytes in the image
    hash_algo: str
    hash_ok: bool
    detail: str = ""
    synthetic: bool = False   # a model blob whose own metadata says it is filler (models.py)


@dataclass
class Report:
    path: Path
    format: str               # "fit" | "package"
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.hash_ok for r in self.rows)


def find_pubkey(image: str | Path) -> Path | None:
    """The public-key DTB a build wrote next to a FIT: `<board>-pubkey.dtb` beside
    `<board>.itb`, else the only `*-pubkey.dtb` in that folder.

    A convenience for reading a build's own output, not a trust anchor: whoever can replace the
    image can replace this file too (flash checks against the configured key instead)."""
    image = Path(image)
    own = image.with_name(f"{image.name.removesuffix('.itb')}-pubkey.dtb")
    if own.is_file():
        return own
    found = sorted(image.parent.glob("*-pubkey.dtb"))
    return found[0] if len(found) == 1 else None


def inspect(path: str | Path, pubkey: str | Path | None = None, find_key: bool = True,
            keys: dict | None = None) -> Report:
    """Inspect a FIT or package; `pubkey` (a public-key DTB) makes FIT signatures checked.

    find_key: without `pubkey`, use the `<board>-pubkey.dtb` next to the image (find_pubkey).
    keys: {key name: (modulus, exponent)} to check signatures against instead of a DTB
    (fit_sig.keys_from_cert: what flash uses)."""
    path = Path(path)
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise SeedfwError(f"cannot read: {exc.strerror}", path) from None
    found_key = None
    if pubkey is None and keys is None and find_key and blob[:4] == b"\xd0\x0d\xfe\xed":
        pubkey = found_key = find_pubkey(path)
    if pubkey is not None:
        try:
            keys = fit_sig.load_keys(Path(pubkey).read_bytes(), pubkey)
        except OSError as exc:
            raise SeedfwError(f"cannot read: {exc.strerror}", pubkey) from None
        except UnicodeDecodeError:
            raise SeedfwError("damaged public-key DTB: a name is not UTF-8", pubkey) from None
    if blob[:4] == b"\xd0\x0d\xfe\xed":
        try:
            report = _inspect_fit(path, blob, keys)
            if found_key is not None:
                report.notes.append(f"signatures checked with {found_key.name} (found next to "
                                    f"the image)")
            return report
        except UnicodeDecodeError as exc:
            # fdt.py decodes node/property names and string properties as UTF-8; a damaged
            # strings block or name must be a clear error, not a traceback (found by
            # tests/test_properties.py).
            raise SeedfwError(f"damaged FIT image: a name or string is not UTF-8 "
                              f"({bytes(exc.object[exc.start:exc.start + 8])!r} at byte "
                              f"{exc.start} of it)", path) from None
        except (struct.error, IndexError) as exc:
            raise SeedfwError(f"damaged FIT image: a property is shorter than its type needs "
                              f"({exc})", path) from None
    if blob[:4] == b"SPKG":
        return _inspect_package(path, blob)
    from . import boot_inspect          # RKNS boot images, GPT disk images, maskrom loaders
    if boot_inspect.recognises(blob) or boot_inspect.placeholder_reason(path):
        return boot_inspect.inspect(path, blob, Report, Row,
                                    lambda p, b: _inspect_fit(p, b, None))
    raise SeedfwError(f"not a FIT image or seedfw boot package (magic {blob[:4].hex()})", path,
                      "offset 0x0")


def _dvfs_detail(data: bytes) -> tuple[str, bool]:
    try:
        t = dvfs.decode(data)
    except SeedfwError as exc:
        return f"bad DVFS table: {exc.message}", False
    except struct.error:
        # dvfs.decode trusts the table's array offsets (a FIT's dvfs node is decoded even when
        # its hash is wrong, to say what is in it): an offset past the end is a bad table.
        return "bad DVFS table: an array offset or count points past the table", False
    text = (f"{len(t['domains'])} domains, {t['opp_count']} opps, {len(t['hints'])} hints, "
            f"profile={t['default_profile']}, crc {'ok' if t['crc_ok'] else 'BAD'}")
    return text, t["crc_ok"]


def _synthetic(model_type: str, stored: bytes, lz4: bool) -> str | None:
    """models.synthetic_marker on a model entry's bytes (expanded first when stored as lz4blk;
    a container that does not expand is reported by _lz4_detail, not here)."""
    data = stored
    if lz4:
        from ..compress import container

        try:
            data = container.read_container(stored)
        except SeedfwError:
            return None
    return models.synthetic_marker(model_type, data)


def _rknn_detail(path: Path, node, data: bytes) -> str:
    """A compiled model's own header and JSON (seedfw.rknn.rknn_file); a model for another NPU
    than the image declares (seedfw,npu-target), or a damaged one, is refused in one line."""
    from ..rknn import rknn_file
    target = node.str("seedfw,npu-target")
    try:
        f = rknn_file.read(data, path)
        if target:
            rknn_file.check_target(f, target, path)
    except SeedfwError as exc:
        if not target:          # not a model seedfw compiled (e.g. a test fixture): describe only
            return ""
        raise SeedfwError(exc.message, path, f"{node.name}: {exc.field}") from None
    return (f"rknn v{f.version} {','.join(f.targets)} toolkit {f.toolkit_version} "
            f"{f.describe_io()}")


def _note_synthetic(report: "Report") -> None:
    fake = [r.name for r in report.rows if r.synthetic]
    if fake:
        report.notes.append(f"{len(fake)} model blob(s) are SYNTHETIC (filler, not runnable "
                            f"models; their own metadata says so): {', '.join(fake)}")


def _lz4_detail(stored: bytes, expected_size: int) -> tuple[str, bool]:
    """Expand an lz4blk container (the compression area's reader checks its crc32s too)."""
    from ..compress import container

    try:
        data = container.read_container(stored)
    except SeedfwError as exc:
        return f"lz4 BAD: {exc.message}", False
    if len(data) != expected_size:
        return f"lz4 BAD: {len(data)} bytes, expected {expected_size}", False
    return "lz4 ok", True


def _inspect_package(path: Path, blob: bytes) -> Report:
    pkg = package.decode(blob, path)
    report = Report(path, "package")
    report.notes.append(f"{len(pkg.entries)} entries, {pkg.total_size} bytes, alignment "
                        f"{pkg.alignment}, header crc ok")
    for e in pkg.entries:
        detail = []
        ok = e.ok
        synthetic = None
        if e.type_id == T_MODEL:
            names = {v: k for k, v in MODEL_SUBTYPES.items()}
            detail.append(names.get(e.subtype, f"subtype {e.subtype}"))
            synthetic = _synthetic(detail[-1], pkg.data(blob, e), bool(e.flags & F_LZ4))
            if synthetic:
                detail.append("SYNTHETIC")
        if e.flags & F_LZ4:
            text, lz4_ok = _lz4_detail(pkg.data(blob, e), e.uncompressed_size)
            detail.append(text)
            ok = ok and lz4_ok
        if e.flags & F_ENCRYPTED:
            detail.append("encrypted")
        if not e.crc32_ok:
            detail.append("crc32 BAD")
        if e.type_id == T_DVFS and e.ok:
            text, crc_ok = _dvfs_detail(pkg.data(blob, e))
            detail.append(text)
            ok = ok and crc_ok
        report.rows.append(Row(e.name, e.kind, e.uncompressed_size, e.size, "sha256+crc32",
                               ok, ", ".join(detail), bool(synthetic)))
    _note_synthetic(report)
    return report


def _fit_data(node: fdt.Node, blob: bytes, fdt_size: int, path) -> bytes:
    if "data" in node.props:
        return node.props["data"]
    size = node.u32("data-size")
    if size is None:
        raise SeedfwError(f"image '{node.name}' has no data", path)
    if "data-position" in node.props:
        start = node.u32("data-position")
    else:  # external data (mkimage -E): offsets count from the 4-aligned end of the FDT
        start = ((fdt_size + 3) & ~3) + (node.u32("data-offset") or 0)
    if start + size > len(blob):
        raise SeedfwError(f"image '{node.name}': external data runs past the end of the file", path)
    return blob[start:start + size]


def _inspect_fit(path: Path, blob: bytes, keys: dict | None) -> Report:
    root = fdt.parse(blob, path)
    fdt_size = struct.unpack_from(">I", blob, 4)[0]
    images = root.children.get("images")
    if images is None:
        raise SeedfwError("FIT has no /images node", path)
    report = Report(path, "fit")
    if root.u32("timestamp") is not None:
        report.notes.append(f"timestamp {root.u32('timestamp')}")
    for node in images.children.values():
        data = _fit_data(node, blob, fdt_size, path)
        hashes = [h for n, h in node.children.items() if n.startswith("hash")]
        ok = bool(hashes)
        algos = []
        for h in hashes:
            algo = h.str("algo", "")
            fn = HASH_ALGOS.get(algo)
            algos.append(algo)
            ok = ok and fn is not None and fn(data).digest() == h.props.get("value")
        size = len(data)
        if node.str("seedfw,compression"):
            size = node.u32("seedfw,uncompressed-size") or size
        detail = []
        synthetic = None
        if node.str("seedfw,model-type"):
            kind = "model"
            detail.append(node.str("seedfw,model-type"))
            synthetic = _synthetic(detail[-1], data, node.str("seedfw,compression") == "lz4blk")
            if synthetic:
                detail.append("SYNTHETIC")
            if "seedfw,encrypted" in node.props:
                detail.append("encrypted")
            elif detail[0] == "rknn" and node.str("seedfw,compression") != "lz4blk":
                detail.append(_rknn_detail(path, node, data))
            if node.str("seedfw,compression") == "lz4blk":
                text, lz4_ok = _lz4_detail(data, size)
                detail.append(text)
                ok = ok and lz4_ok
        elif node.str("type") == "flat_dt":
            kind = "fdt"
        elif node.name == "dvfs":
            kind = "dvfs"
            text, crc_ok = _dvfs_detail(data)
            detail.append(text)
            ok = ok and crc_ok
        else:
            kind = node.str("type", "?")
        if node.u32("load") is not None:
            detail.append(f"load 0x{node.u32('load'):x}")
        report.rows.append(Row(node.name, kind, size, len(data), "+".join(algos) or "none", ok,
                               ", ".join(d for d in detail if d), bool(synthetic)))
    _note_synthetic(report)
    configs = root.children.get("configurations")
    for conf in (configs.children.values() if configs else ()):
        refs = [conf.str(k) for k in ("firmware", "kernel", "fdt") if conf.str(k)]
        refs += conf.strings("loadables")
        missing = [r for r in refs if r not in images.children]
        report.notes.append(f"configuration {conf.name}: {len(refs)} images"
                            + (f", MISSING {', '.join(missing)}" if missing else ""))
        if missing:
            report.rows.append(Row(conf.name, "config", 0, 0, "refs", False,
                                   f"missing images {', '.join(missing)}"))
        for sig_name, sig in conf.children.items():
            if sig_name.startswith("signature"):
                value = sig.props.get("value", b"")
                report.notes.append(f"{conf.name}/{sig_name}: {sig.str('algo')} key "
                                    f"'{sig.str('key-name-hint')}', {len(value)}-byte signature"
                                    + (" (not verified: no public key given)" if keys is None
                                       else ""))
        if keys is not None:
            try:
                results = fit_sig.verify_config(blob, conf, keys)
            except SeedfwError as exc:   # the signed region itself is damaged: a failed check
                results = [("signature", "?", False, f"signature BAD: {exc.message}")]
            for sig_name, key_name, ok, why in results:
                report.rows.append(Row(f"{conf.name}/{sig_name}", "signature", 0, 0,
                                       f"rsa:{key_name}", ok, why))
            if not results:
                report.rows.append(Row(f"{conf.name}", "signature", 0, 0, "none", False,
                                       "unsigned, but a public key was given"))
    return report


def render(report: Report, console=None) -> None:
    """Print the report as a rich table."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from .. import textout

    console = console or Console()
    cells = [(r.name, r.type, str(r.size), str(r.stored_size), r.hash_algo,
              "ok" if r.hash_ok else "BAD", r.detail) for r in report.rows]
    header = ("name", "type", "size", "stored", "hash", "ok", "detail")
    # The boxed table only when it fits whole (3 columns of borders and padding per cell);
    # narrower, or piped, one record per entry so no cell is ever cut or wrapped.
    if textout.natural_width(cells, header) + 3 * len(header) + 1 - 2 * (len(header) - 1) \
            > console.width:
        console.print(f"{report.path.name} ({report.format})", markup=False, highlight=False)
        records = textout.records(
            [(c[5], c[0], c[1], c[2], c[3], c[4], c[6]) for c in cells], first=2,
            labels=(None, "size", "stored", "hash", None), cols=console.width)
        for line in records:
            style = "bold red" if line.startswith("BAD") else None
            console.print(line, markup=False, highlight=False, style=style, soft_wrap=True)
    else:
        table = Table(title=f"{report.path.name} ({report.format})")
        for col, kw in (("name", {}), ("type", {}), ("size", {"justify": "right"}),
                        ("stored", {"justify": "right"}), ("hash", {}), ("ok", {}),
                        ("detail", {})):
            table.add_column(col, **kw)
        for c in cells:
            table.add_row(*map(escape, c[:5]), "[green]ok[/green]" if c[5] == "ok"
                          else "[bold red]BAD[/bold red]", escape(c[6]))
        console.print(table)
    for note in report.notes:
        # the synthetic-model note is a warning a reader must not skim past
        if "SYNTHETIC" in note:
            console.print(f"[bold yellow]warning:[/] {escape(note)}")
        else:
            console.print(note)
    console.print("all hashes ok" if report.ok else
                  f"[bold red]{sum(not r.hash_ok for r in report.rows)} entries FAILED[/bold red]")

