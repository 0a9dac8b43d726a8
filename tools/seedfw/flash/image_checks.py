"""Checks an image must pass before any probe is touched: which file to program, that it was built
for this board (manifest board, size and sha256; ELF machine and integrity), and — when the
build requires it — that its FIT signature verifies against the configured certificate."""

from __future__ import annotations

from pathlib import Path

from ..errors import SeedfwError

ARCH_MACHINE = {"armv7m": 40, "aarch64": 183}      # board.yaml arch -> ELF e_machine


def find_image(board, image, output, backend: str | None = None) -> Path:
    """--image, or the board's flashable artifact listed in <out>/manifest.json (the build's)."""
    from ..manifest import Manifest
    from ..paths import output_dir

    if image:
        return Path(image)
    manifest = Manifest.load(output_dir(board.name, output),
                             "no --image given and no build output here (run the build first)")
    # What each backend programs is declared by the package that built it (Output.flash),
    # listed in order under the manifest's "flash"; the first one present wins.
    for path in manifest.flash_default(backend or board.flash_backend):
        if path.is_file():
            return path
    raise SeedfwError(f"the build declares no image for flash backend "
                      f"'{backend or board.flash_backend}'; pass --image", manifest.path, "flash")


def default_loader(board, output) -> Path | None:
    """The loader the build declares (boot role "loader", e.g. the RK3588 maskrom loader), or
    None when the manifest has none; refused when it is a NON-FUNCTIONAL placeholder."""
    from ..manifest import Manifest
    from ..paths import output_dir

    manifest = Manifest.find(output_dir(board.name, output))
    for a in manifest.by_role("loader") if manifest is not None else ():
        if not a.functional:
            raise SeedfwError("NON-FUNCTIONAL loader, refusing to use it: "
                              f"{manifest.non_functional.get(a.name, '')}", manifest.file(a),
                              "--loader")
        return manifest.file(a)
    return None


def check_image_board(board, image: Path) -> None:
    """Refuse an image that is empty, built for another board (the build manifest names the
    board), changed since the build (size and sha256 against the manifest entry), or an ELF that
    is truncated or for another architecture."""
    from .. import util
    from .base import ELF_SUFFIXES, EM_NAMES, check_elf_image
    from ..manifest import Manifest

    size = image.stat().st_size
    manifest = Manifest.beside(image)
    entry = manifest.by_path(image) if manifest is not None else None
    if entry is not None and not entry.functional:
        why = manifest.non_functional.get(image.name, "a placeholder")
        raise SeedfwError(f"NON-FUNCTIONAL image, refusing to flash it: {why}", image)
    if size == 0:
        raise SeedfwError("empty image (0 bytes): nothing to program", image)
    if manifest is not None:
        if manifest.board and manifest.board != board.name:
            raise SeedfwError(f"image was built for board '{manifest.board}', not '{board.name}'",
                              manifest.path, "board")
        if entry is not None and entry.size is not None and entry.size != size:
            raise SeedfwError(f"{size} bytes, but the build's manifest.json lists {entry.size} "
                              "(truncated or changed since the build)", image, "size")
        if entry is not None and entry.sha256 is not None \
                and util.sha256_file(image) != entry.sha256:
            raise SeedfwError("sha256 differs from the build's manifest.json (changed since the "
                              "build)", image, "sha256")
    with open(image, "rb") as f:  # door: 4 bytes of a file checked by check_image
        head = f.read(4)
    if head == b"\x7fELF" or image.suffix.lower() in ELF_SUFFIXES:
        machine = check_elf_image(image)
        want = ARCH_MACHINE.get(board.arch)
        if want and machine != want:
            raise SeedfwError(f"ELF is for {EM_NAMES.get(machine, f'e_machine {machine}')}, board "
                              f"'{board.name}' needs {EM_NAMES[want]}", image, "e_machine")


def _config_for(image: Path) -> Path | None:
    """config.json of the output directory an image came from (beside it or up to two levels
    above: images sit in <out>/images/); None for a loose image."""
    for folder in list(image.resolve().parents)[:3]:
        if (folder / "config.json").is_file():
            return folder / "config.json"
    return None


def check_image_signature(board, image: Path) -> None:
    """Refuse an unsigned image, or one whose FIT signature does not verify, when the image's
    build configuration says CONFIG_IMAGE_SIGN_REQUIRED. Runs before any probe is touched.

    The public key is the configured one (<IMAGE_SIGN_KEY_DIR>/<name>.crt, only its public half
    is read), not the `<board>-pubkey.dtb` in the output: whoever can replace the image could
    replace that file too. Without the certificate, the build's public-key DTB is used."""
    from .. import config as config_mod
    from ..images import fit_sig, inspect as inspect_mod
    from ..paths import ROOT

    cfg_path = _config_for(image)
    if cfg_path is None:
        return
    values = config_mod.load_values(cfg_path.parent)
    if not (values.get("IMAGE_SIGN") and values.get("IMAGE_SIGN_REQUIRED")):
        return
    why = f"board '{board.name}' requires signed images (IMAGE_SIGN_REQUIRED in {cfg_path})"
    with open(image, "rb") as f:  # door: 4 bytes of a file checked by check_image
        if f.read(4) != b"\xd0\x0d\xfe\xed":
            raise SeedfwError(f"unsigned image (not a signed FIT): {why}", image, "signature")
    name = values.get("IMAGE_SIGN_KEY_NAME") or "dev"
    key_dir = Path(values.get("IMAGE_SIGN_KEY_DIR") or "keys")
    cert = (key_dir if key_dir.is_absolute() else ROOT / key_dir) / f"{name}.crt"
    pubkey_dtb = cfg_path.parent / "images" / f"{board.name}-pubkey.dtb"
    if cert.is_file():
        report = inspect_mod.inspect(image, keys=fit_sig.keys_from_cert(cert, name))
    elif pubkey_dtb.is_file():
        report = inspect_mod.inspect(image, pubkey_dtb)
    else:
        raise SeedfwError(f"no public key to check the signature with (neither {cert} nor "
                          f"{pubkey_dtb}): {why}", image, "signature")
    sigs = [r for r in report.rows if r.type == "signature"]
    if not sigs or all(r.hash_algo == "none" for r in sigs):
        raise SeedfwError(f"unsigned FIT: {why}", image, "signature")
    bad = [f"{r.name}: {r.detail if r.type == 'signature' else 'hash BAD'}"
           for r in report.rows if not r.hash_ok]
    if bad:
        raise SeedfwError(f"signature check failed ({'; '.join(bad)}): {why}", image, "signature")
