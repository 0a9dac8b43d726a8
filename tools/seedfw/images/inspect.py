"""Read an image back, verify every hash, describe every entry.

The format is recognised by its magic (FDT 0xd00dfeed → FIT, "SPKG" → boot package); what is
neither goes to seedfw.update.inspect (U-Boot env images, RAUC bundles) or
seedfw.images.boot_inspect (RKNS idblock images such as u-boot-rockchip.bin and its -spi variant,
GPT disk images, maskrom loaders). FIT images
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
from .. import reading
from .entries import F_ENCRYPTED, F_LZ4, MODEL_SUBTYPES, T_DVFS, T_MODEL

HASH_ALGOS = {"sha256": hashlib.sha256, "sha1": hashlib.sha1, "md5": hashlib.md5}
FDT_MAGIC = b"\xd0\x0d\xfe\xed"


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
    # What the ok column says instead of "BAD" for a failure that is not a mismatch: "unchecked"
    # (nothing could be verified, e.g. an RKNS header with hash type none). Still a failure:
    # hash_ok is False, so the summary counts it and the exit is non-zero.
    verdict: str = ""
    checked: bool = True      # False: only listed (an ext4 file, a partition's extent), nothing
                              # verified its bytes: shown "listed", never "ok", not a failure

    @property
    def status(self) -> str:
        if not self.hash_ok:
            return self.verdict or "BAD"
        return "ok" if self.checked else "listed"


# hash_algo values that verify nothing (a magic compared is not a hash)
UNVERIFIED = ("-", "none", "", "signature")


@dataclass
class Report:
    path: Path
    format: str               # "fit" | "package"
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.hash_ok for r in self.rows)

    @property
    def verified_bytes(self) -> int:
        """Bytes of the rows whose hash, checksum or signature was recomputed and matched."""
        return sum(r.stored_size for r in self.rows
                   if r.checked and r.hash_ok and r.hash_algo not in UNVERIFIED)

    @property
    def listed_bytes(self) -> int:
        """Bytes of the rows that were only listed: files' contents (a partition's extent is not
        counted, its contents are rows of their own; nor a directory's own blocks)."""
        return sum(r.stored_size for r in self.rows
                   if not r.checked and r.type not in ("partition", "dir"))

    def summary(self) -> str:
        """The closing line: what failed, else how much was verified and how much only listed."""
        if not self.ok:
            unchecked = sum(not r.hash_ok and r.verdict == "unchecked" for r in self.rows)
            return (f"{sum(not r.hash_ok for r in self.rows)} entries FAILED"
                    + (f" ({unchecked} unchecked)" if unchecked else ""))
        listed = sum(not r.checked for r in self.rows)
        return (f"all hashes ok: {self.verified_bytes} bytes verified by a hash or signature"
                + (f"; {listed} rows ({self.listed_bytes} bytes) only listed, not verified"
                   if listed else ""))


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


DECODE_ERRORS = (struct.error, IndexError, KeyError, ValueError, UnicodeDecodeError, TypeError,
                 OverflowError, RecursionError, AttributeError, ZeroDivisionError)


def inspect(path: str | Path, pubkey: str | Path | None = None, find_key: bool = True,
            keys: dict | None = None) -> Report:
    """Inspect a FIT or package; `pubkey` (a public-key DTB) makes FIT signatures checked.

    find_key: without `pubkey`, use the `<board>-pubkey.dtb` next to the image (find_pubkey).
    keys: {key name: (modulus, exponent)} to check signatures against instead of a DTB
    (fit_sig.keys_from_cert: what flash uses).

    The file is hostile input (docs/hostile-input.md): read through reading.read_input (regular
    files only, size-capped, mapped), every structure bounded; any decode failure is one
    SeedfwError naming the file, never a traceback."""
    path = Path(path)
    buf = reading.read_input(path, "image")
    try:
        return _inspect(path, buf, pubkey, find_key, keys)
    except SeedfwError as exc:
        if exc.file is None:           # raised by a helper that did not know the file
            raise SeedfwError(exc.message, path, exc.field) from None
        raise
    except DECODE_ERRORS as exc:
        # A backstop: every reader checks its ranges (reading.View), and the fuzz campaigns
        # (seedfw.fuzz.pyfuzz) found none of these; should one remain, it is still one line.
        raise SeedfwError(f"damaged image: {type(exc).__name__}: {exc}", path) from None
    except MemoryError:
        raise SeedfwError("damaged image: a structure asked for more memory than there is",
                          path) from None


def _inspect(path, buf, pubkey, find_key, keys) -> Report:
    view = reading.View(buf, source=path, what="image")
    magic = view.peek(0, 4)
    from ..update import inspect as update_inspect      # env images, RAUC bundles (issue 29)
    kind = update_inspect.recognises(view, path) if magic not in (FDT_MAGIC, b"SPKG") else None
    if kind:
        return update_inspect.inspect(path, view, kind, pubkey, Report, Row)
    found_key = None
    if pubkey is None and keys is None and find_key and magic == FDT_MAGIC:
        pubkey = found_key = find_pubkey(path)
    if pubkey is not None:
        try:
            keys = fit_sig.load_keys(reading.read_input(pubkey, "pubkey"), pubkey)
        except SeedfwError as exc:
            raise SeedfwError(exc.message, exc.file or pubkey, exc.field) from None
        except DECODE_ERRORS as exc:
            raise SeedfwError(f"damaged public-key DTB: {exc}", pubkey) from None
    budget = reading.HashBudget(len(view), path)
    if magic == FDT_MAGIC:
        report = _inspect_fit(path, view, keys, budget)
        if found_key is not None:
            report.notes.append(f"signatures checked with {found_key.name} (found next to "
                                f"the image)")
        return report
    if magic == b"SPKG":
        report = _inspect_package(path, view, budget)
        if keys is not None:
            _no_signatures(report, "a seedfw boot package carries no signatures")
        return report
    from . import boot_inspect          # RKNS boot images, GPT disk images, maskrom loaders
    if boot_inspect.recognises(view) or boot_inspect.placeholder_reason(path):
        report = boot_inspect.inspect(path, view, Report, Row,
                                      lambda p, v: _inspect_fit(p, v, keys, budget),
                                      keys=keys, budget=budget)
        if report.format == "gpt disk image":
            update_inspect.disk_rows(report, Row, view)
        return report
    raise SeedfwError(f"not a FIT image or seedfw boot package (magic {magic.hex()})", path,
                      "offset 0x0")


def _no_signatures(report: "Report", why: str) -> None:
    """--key was given for something whose signatures cannot be checked: a failing row, never
    silence (the user asked for a signature check and none happened)."""
    report.rows.append(Row("signature", "signature", 0, 0, "none", False,
                           f"--key given, but {why}: nothing to verify"))


def _dvfs_detail(data) -> tuple[str, bool]:
    try:
        t = dvfs.decode(reading.View.of(data).bytes())
    except SeedfwError as exc:
        return f"bad DVFS table: {exc.message}", False
    except struct.error:
        return "bad DVFS table: an array offset or count points past the table", False
    text = (f"{len(t['domains'])} domains, {t['opp_count']} opps, {len(t['hints'])} hints, "
            f"profile={t['default_profile']}, crc {'ok' if t['crc_ok'] else 'BAD'}")
    return text, t["crc_ok"]


def _model_details(model_type: str, stored, lz4: bool, expected_size: int,
                   budget) -> tuple[list[str], bool, str | None]:
    """(details, ok, synthetic marker) of a model entry: an lz4blk container is expanded once
    (capped: reading.CAPS lz4_output, and never beyond the size the entry declares)."""
    data = reading.View.of(stored)
    details, ok = [], True
    if lz4:
        from ..compress import container
        try:
            info = container.parse_container(data.memory(), "lz4blk")
            if info.original_size != expected_size:
                raise SeedfwError(f"expands to {info.original_size} bytes, the entry says "
                                  f"{expected_size}")
            budget.expand(info.original_size, "lz4")
            expanded = container.read_container(data.memory())
        except SeedfwError as exc:
            return [f"lz4 BAD: {exc.message}"], False, None
        details.append("lz4 ok")
        raw = expanded
    else:
        raw = data.bytes()
    return details, ok, models.synthetic_marker(model_type, raw)


def _rknn_detail(path: Path, node, data: bytes) -> str:
    """A compiled model's own header and JSON (seedfw.models.rknn.rknn_file); a model for another NPU
    than the image declares (seedfw,npu-target), or a damaged one, is refused in one line."""
    from ..models.rknn import rknn_file
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


def _inspect_package(path: Path, view, budget) -> Report:
    pkg = package.decode(view, path)
    report = Report(path, "package")
    report.notes.append(f"{len(pkg.entries)} entries, {pkg.total_size} bytes, alignment "
                        f"{pkg.alignment}, header crc ok")
    names = {v: k for k, v in MODEL_SUBTYPES.items()}
    for e in pkg.entries:
        detail = []
        ok = e.ok
        synthetic = None
        data = view.sub(e.offset, e.size, f"entry {e.index}")
        if e.type_id == T_MODEL:
            detail.append(names.get(e.subtype, f"subtype {e.subtype}"))
            more, lz4_ok, synthetic = _model_details(detail[-1], data, bool(e.flags & F_LZ4),
                                                     e.uncompressed_size, budget)
            if synthetic:
                detail.append("SYNTHETIC")
            detail += more
            ok = ok and lz4_ok
        elif e.flags & F_LZ4:
            detail.append("lz4 flag on a non-model entry: not checked")
            ok = False
        if e.flags & F_ENCRYPTED:
            detail.append("encrypted")
        if not e.crc32_ok:
            detail.append("crc32 BAD")
        if e.type_id == T_DVFS:
            if e.ok:
                text, crc_ok = _dvfs_detail(data)
                detail.append(text)
                ok = ok and crc_ok
            else:
                detail.append("not decoded (hash BAD)")
        report.rows.append(Row(e.name, e.kind, e.uncompressed_size, e.size, "sha256+crc32",
                               ok, ", ".join(detail), bool(synthetic)))
    _note_synthetic(report)
    return report


def _fit_data(node: fdt.Node, view, fdt_size: int, path):
    """The image's bytes as a View: embedded `data`, or external (data-position, or
    data-offset after the 4-aligned end of the FDT, as mkimage -E writes)."""
    field = f"/images/{node.name}"
    external = [p for p in ("data-position", "data-offset") if p in node.props]
    if "data" in node.props and external:
        # U-Boot takes the external data (fit_image_get_data_and_size), we would hash `data`:
        # the two readings must not differ, so such a node is refused.
        raise SeedfwError(f"image '{node.name}' has both embedded data and {external[0]} "
                          f"(U-Boot would load the external bytes): refused", path, field)
    if "data" in node.props:
        data = reading.View.of(node.props["data"], path)
    else:
        size = node.u32("data-size")
        if size is None:
            raise SeedfwError(f"image '{node.name}' has no data", path, field)
        if "data-position" in node.props:
            start = node.u32("data-position")
        else:
            start = ((fdt_size + 3) & ~3) + (node.u32("data-offset") or 0)
        if start is None or start + size > len(view):
            raise SeedfwError(f"image '{node.name}': external data runs past the end of the "
                              f"file", path, field)
        data = view.sub(start, size, field)
    return data                 # (a window: costs nothing until hashed — budget.spend there)


def _inspect_fit(path: Path, view, keys: dict | None, budget) -> Report:
    view = reading.View.of(view, path, "FIT")
    root = fdt.parse(view, path)
    fdt_size = view.u32be(4, "offset 0x4")
    images = root.children.get("images")
    if images is None:
        raise SeedfwError("FIT has no /images node", path)
    reading.cap("fit_images", len(images.children), path, "/images", "images in the FIT:")
    report = Report(path, "fit")
    if root.u32("timestamp") is not None:
        report.notes.append(f"timestamp {root.u32('timestamp')}")
    for node in images.children.values():
        data = _fit_data(node, view, fdt_size, path)
        hashes = [h for n, h in node.children.items() if n.startswith("hash")]
        ok = bool(hashes)
        algos = []
        for h in hashes:
            algo = h.str("algo", "")
            algos.append(algo)
            ok = ok and algo in HASH_ALGOS and data.digest(algo) == h.props.get("value")
            budget.spend(len(data), f"/images/{node.name}/{h.name}")
        size = len(data)
        if node.str("seedfw,compression"):
            size = node.u32("seedfw,uncompressed-size") or size
        detail = []
        synthetic = None
        if node.str("seedfw,model-type"):
            kind = "model"
            detail.append(node.str("seedfw,model-type"))
            more, lz4_ok, synthetic = _model_details(
                detail[-1], data, node.str("seedfw,compression") == "lz4blk", size, budget)
            if synthetic:
                detail.append("SYNTHETIC")
            if "seedfw,encrypted" in node.props:
                detail.append("encrypted")
            elif detail[0] == "rknn" and node.str("seedfw,compression") != "lz4blk":
                detail.append(_rknn_detail(path, node, data.bytes()))
            detail += more
            ok = ok and lz4_ok
        elif node.str("type") == "flat_dt":
            kind = "fdt"
        elif node.name == "dvfs":
            kind = "dvfs"
            if ok:            # a table whose hash is wrong is not decoded (it is untrusted)
                text, crc_ok = _dvfs_detail(data)
                detail.append(text)
                ok = ok and crc_ok
            else:
                detail.append("not decoded (hash BAD)")
        else:
            kind = node.str("type", "?")
        if node.u32("load") is not None:
            detail.append(f"load 0x{node.u32('load'):x}")
        if not hashes:
            detail.append("no hash node: cannot be checked")
        report.rows.append(Row(node.name, kind, size, len(data), "+".join(algos) or "none", ok,
                               ", ".join(d for d in detail if d), bool(synthetic)))
    _note_synthetic(report)
    configs = root.children.get("configurations")
    blob = view.bytes(0, fdt_size) if keys is not None else None
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
    if keys is not None and not (configs and configs.children):
        _no_signatures(report, "the FIT has no configuration to verify")
    return report


def render(report: Report, console=None) -> None:
    """Print the report as a rich table. Every string that came from the file is a plain Text
    with control characters escaped (reading.plain): a node named `[/x]` or holding an ESC
    sequence is shown, never interpreted (--json prints the raw strings)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    def t(value, style=None) -> Text:
        return Text(reading.plain(value), style=style or "")

    from .. import textout

    console = console or Console()
    # names from the file are shown plain: no markup, no control characters
    cells = [tuple(reading.plain(x) for x in (r.name, r.type, str(r.size), str(r.stored_size),
                                             r.hash_algo, r.status, r.detail))
             for r in report.rows]
    header = ("name", "type", "size", "stored", "hash", "ok", "detail")
    # The boxed table only when it fits whole (3 columns of borders and padding per cell);
    # narrower, or piped, one record per entry so no cell is ever cut or wrapped.
    if textout.natural_width(cells, header) + 3 * len(header) + 1 - 2 * (len(header) - 1) \
            > console.width:
        console.print(t(f"{report.path.name} ({report.format})"))
        records = textout.records(
            [(c[5], c[0], c[1], c[2], c[3], c[4], c[6]) for c in cells], first=2,
            labels=(None, "size", "stored", "hash", None), cols=console.width)
        for line in records:
            # the first line of a failing record (not "ok", not "listed", not a continuation)
            style = None if line[:1].isspace() or line.startswith(("ok", "listed")) \
                else "bold red"
            console.print(line, markup=False, highlight=False, style=style, soft_wrap=True)
    else:
        table = Table(title=t(f"{report.path.name} ({report.format})"))
        for col, kw in (("name", {}), ("type", {}), ("size", {"justify": "right"}),
                        ("stored", {"justify": "right"}), ("hash", {}), ("ok", {}),
                        ("detail", {})):
            table.add_column(col, **kw)
        for c in cells:
            table.add_row(*map(t, c[:5]), t(c[5], {"ok": "green", "listed": "dim"}.get(c[5],
                                                                                    "bold red")),
                          t(c[6]))
        console.print(table)
    for note in report.notes:
        # the synthetic-model note is a warning a reader must not skim past
        if "SYNTHETIC" in note or note.startswith("warning: "):
            console.print(Text.assemble(("warning:", "bold yellow"), " ",
                                        reading.plain(note.removeprefix("warning: "))))
        else:
            console.print(t(note))
    console.print(t(report.summary(), None if report.ok else "bold red"))
