"""Checks an image must pass before any probe is touched: which file to program, that it was built
for this board (manifest board, size and sha256; ELF machine and integrity), and — when the
build requires it — that its FIT signature verifies against the configured certificate."""

from __future__ import annotations

from pathlib import Path

from .. import util
from ..errors import SeedfwError

ARCH_MACHINE = {"armv7m": 40, "aarch64": 183}      # board.yaml arch -> ELF e_machine




def _read_manifest(manifest: Path) -> dict:
    return util.read_json(manifest, " (the build manifest)")


def _artifacts(manifest: Path, data: dict) -> list[dict]:
    artifacts = data.get("artifacts", [])
    if not isinstance(artifacts, list) or not all(isinstance(a, dict) for a in artifacts):
        raise SeedfwError("must be a list of objects", manifest, "artifacts")
    return artifacts


def find_image(board, image, output, backend: str | None = None) -> Path:
    """--image, or the board's flashable artifact listed in <out>/manifest.json (the build's)."""
    from ..paths import output_dir

    if image:
        return Path(image)
    out = output_dir(board.name, output)
    manifest = out / "manifest.json"
    if not manifest.is_file():
        raise SeedfwError("no --image given and no build output here (run the build first)", manifest)
    # What each backend programs is declared by the package that built it (BootArtifact.flash),
    # listed in order under the manifest's "flash"; the first one present wins.
    data = _read_manifest(manifest)
    _artifacts(manifest, data)
    declared = data.get("flash") or {}
    if not isinstance(declared, dict):
        raise SeedfwError("must be an object {backend: [paths]}", manifest, "flash")
    for path in declared.get(backend or board.flash_backend) or ():
        if (out / path).is_file():
            return out / path
    raise SeedfwError(f"the build declares no image for flash backend "
                      f"'{backend or board.flash_backend}'; pass --image", manifest, "flash")


def default_loader(board, output) -> Path | None:
    """The loader the build declares (boot role "loader", e.g. the RK3588 maskrom loader), or
    None when the manifest has none; refused when it is a NON-FUNCTIONAL placeholder."""
    from ..paths import output_dir

    out = output_dir(board.name, output)
    manifest = out / "manifest.json"
    if not manifest.is_file():
        return None
    data = _read_manifest(manifest)
    for a in _artifacts(manifest, data):
        if (a.get("declared") or {}).get("role") == "loader":
            if a.get("functional") is False:
                raise SeedfwError("NON-FUNCTIONAL loader, refusing to use it: "
                                  f"{(data.get('non_functional') or {}).get(a.get('name'), '')}",
                                  out / str(a.get("path")), "--loader")
            return out / str(a.get("path"))
    return None


def _manifest_for(image: Path) -> Path | None:
    """The build manifest.json beside the image or in a parent (the image may sit in a sub-folder
    of the output directory); None for a loose image."""
    for folder in list(image.resolve().parents)[:3]:
        candidate = folder / "manifest.json"
        if candidate.is_file():
            return candidate
    return None


def check_image_board(board, image: Path) -> None:
    """Refuse an image that is empty, built for another board (the build manifest names the
    board), changed since the build (size and sha256 against the manifest entry), or an ELF that
    is truncated or for another architecture."""
    from .. import util
    from ..flash.base import ELF_SUFFIXES, EM_NAMES, check_elf_image

    size = image.stat().st_size
    manifest = _manifest_for(image)
    if manifest is not None:
        data = _read_manifest(manifest)
        entry = next((a for a in _artifacts(manifest, data)
                      if isinstance(a, dict) and Path(manifest.parent, str(a.get("path"))).resolve()
                      == image.resolve()), None)
        if entry is not None and entry.get("functional") is False:
            why = (data.get("non_functional") or {}).get(image.name, "a placeholder")
            raise SeedfwError(f"NON-FUNCTIONAL image, refusing to flash it: {why}", image)
    if size == 0:
        raise SeedfwError("empty image (0 bytes): nothing to program", image)
    if manifest is not None:
        built_for = data.get("board")
        if built_for and built_for != board.name:
            raise SeedfwError(f"image was built for board '{built_for}', not '{board.name}'", manifest, "board")
        for entry in _artifacts(manifest, data):
            listed = entry.get("path")
            if not isinstance(listed, str) or (manifest.parent / listed).resolve() != image.resolve():
                continue
            if isinstance(entry.get("size"), int) and entry["size"] != size:
                raise SeedfwError(f"{size} bytes, but the build's manifest.json lists {entry['size']} "
                                  "(truncated or changed since the build)", image, "size")
            if isinstance(entry.get("sha256"), str) and util.sha256_file(image) != entry["sha256"]:
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
