"""Real builds shared by the slow tests: each board is built once per session.

Plain functions (no pytest fixtures here) so conftest.py can wrap them, e.g.

    @pytest.fixture(scope="session")
    def rk3588_build(tmp_path_factory):
        return builds.build_board("rk3588", tmp_path_factory)

Downloads go to the normal shared cache (SEEDFW_DL_DIR or ~/.cache/seedfw/dl), so a test session
fetches TF-A from the Debian source archive at most once per machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from seedfw import build as build_mod

_BUILT: dict[tuple, "build_mod.BuildResult"] = {}
# The OS (Buildroot) configuration of the session's Buildroot build (conftest.py br_build).
BUILDROOT_FRAGMENT = Path(__file__).resolve().parents[1] / "configs" / "buildroot.fragment"


# Tags whose build is an independent compile of everything (the reproducibility pair's second
# half): it takes nothing from the artifact store, so it proves what a store hit relies on.
COLD_TAGS = ("second",)


def os_key() -> tuple:
    """The build_board key of qemu-aarch64 with the OS (conftest's br_build and os_build)."""
    return ("qemu-aarch64", (str(BUILDROOT_FRAGMENT),), "")


def build_board(name: str, tmp_path_factory, fragments=(), tag: str = "") -> "build_mod.BuildResult":
    """Build `name` (once per session per name/fragments/tag) into a pytest temporary directory.

    Through the artifact store (seedfw.cache) like any user's build: a configuration the
    machine built before — the README's first command builds rk3588 — is restored, a variant
    restores every step its fragment does not touch. A COLD_TAGS build takes nothing from the
    machine's store (see `_cold_store`).

    Under pytest-xdist each worker has its own session builds (tests may re-run steps in them),
    and the first worker to need one builds it while a second waits (`_run_lock`), then restores
    it from the store: one compile per configuration per run, not one per worker."""
    key = (name, tuple(str(f) for f in fragments), tag)
    if key not in _BUILT:
        out = tmp_path_factory.mktemp(f"build-{name}{'-' + tag if tag else ''}")
        with _run_lock(key), (_cold_store(tmp_path_factory) if tag in COLD_TAGS
                              else contextlib.nullcontext()):
            _BUILT[key] = build_mod.build(name, out, fragments)
    return _BUILT[key]


@contextlib.contextmanager
def _run_lock(key):
    """An flock shared by the workers of one xdist run (PYTEST_XDIST_TESTRUNUID), per build key;
    nothing outside xdist."""
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not uid:
        yield
        return
    from seedfw import util
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"seedfw-test-run-{uid}" / f"{digest}.lock"
    with util.file_lock(lock, f"the session build {key[0]} of another test worker",
                        say=lambda m: None):
        yield


@contextlib.contextmanager
def _cold_store(tmp_path_factory):
    """The cold builds (the reproducibility pairs' second halves) share a store of their own,
    empty at the start of the session: each step is compiled cold once per session, and a
    step two boards have in common (rock5a's Buildroot is rk3588's) is compiled once — which is
    the store's own claim, so the pair still proves what a hit from the machine's store relies
    on. SEEDFW_ARTIFACT_CACHE is read per build (seedfw.cache.from_environment)."""
    global _COLD_DIR
    if _COLD_DIR is None:
        _COLD_DIR = tmp_path_factory.mktemp("cold-store")
    from seedfw import util
    with util.environ({"SEEDFW_ARTIFACT_CACHE": str(_COLD_DIR), "SEEDFW_CACHE_REMOTE": None}):
        yield


_COLD_DIR: Path | None = None


def rebuild(result: "build_mod.BuildResult", fragments=(), store: bool = False) -> "build_mod.BuildResult":
    """Build again into the same output directory (no-op unless `fragments` change something).
    Without the store by default: the tests that rebuild assert what a change re-runs."""
    return build_mod.build(result.board, result.outdir, fragments, store=store)


def image(result: "build_mod.BuildResult", name: str) -> Path:
    return Path(result.outdir) / "images" / name


def copy_with_corrupted_model(result: "build_mod.BuildResult", dest: Path, model: str = "digits") -> Path:
    """A copy of a qemu-aarch64 output directory whose boot package has one byte of `model`
    flipped (hashes left as they were): the payload must reject it at boot."""
    from seedfw.images import package

    shutil.copytree(result.outdir, dest, symlinks=True)
    pkg = dest / "images" / f"{result.board}-boot.pkg"
    blob = bytearray(pkg.read_bytes())
    entry = next(e for e in package.decode(bytes(blob)).entries if e.name == model)
    blob[entry.offset + entry.size // 2] ^= 0x40
    pkg.write_bytes(bytes(blob))
    rebuild_disk(dest)
    return dest


def rebuild_disk(outdir: Path) -> None:
    """Re-make the firmware FIT and disk image of a (copied, altered) qemu-aarch64 output dir
    from its images/bl33.bin and boot package, as the build would: U-Boot then finds every FIT
    hash right and starts the payload, so the payload's own checks are what is tested."""
    import json

    from seedfw import boards, parts
    from seedfw.parts import disk

    outdir = Path(outdir)
    board = boards.get(json.loads((outdir / "manifest.json").read_text())["board"])
    if not (outdir / "images" / f"{board.name}-disk.img").is_file():
        return                                   # no U-Boot in this build: QEMU loads the package
    ctx = parts.context(board, outdir, {"UBOOT": True, "TFA": True, "PAYLOAD": True})
    for final, built in disk.make(ctx, outdir / "build" / "disk-retest",
                                  outdir / "logs" / "disk-retest.log").items():
        shutil.copyfile(built, final)
