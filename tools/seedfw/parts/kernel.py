"""The Linux kernel: a pinned Debian arm64 kernel package, not compiled here.

Why Debian's: its `cloud` flavour boots on QEMU virt (PL011, virtio, initramfs) and is signed off
by a distribution; a kernel build would add ~30 minutes to every cold build for nothing we change.
The .deb is pinned by sha256 like every source. Sites, in order: the mirror
($SEEDFW_MIRROR_DIR/debian/), then Debian's archive through a private arm64 apt state (the
machine's apt configuration is never touched). Debian drops old kernel versions from the archive
after point releases; when that happens the fetch fails with one line that names the pin and how
to update it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import paths, plan, sources, util
from ..errors import SeedfwError
from .base import BuildContext, Output, Part


@dataclass(frozen=True)
class KernelDeb:
    package: str
    version: str
    suite: str
    file: sources.SourceFile
    image: str                     # the kernel image inside the package
    # The board's DT (board.yaml boot.dtb) is taken out of the package too (KernelPart.dtbs):
    # a board with extlinux boots with the kernel's own DT, the qemu boards with QEMU's.

    @property
    def release(self) -> str:
        return self.package.removeprefix("linux-image-")


# Checked 2026-11-30 (bookworm-updates); FACTS.md: vmlinuz is an uncompressed arm64 Image.
KERNELS = {
    "linux-image-6.1.0-50-cloud-arm64": KernelDeb(
        "linux-image-6.1.0-50-cloud-arm64", "6.1.176-1", "bookworm",
        sources.SourceFile("linux-image-6.1.0-50-cloud-arm64_6.1.176-1_arm64.deb", 21_130_624,
                           "9d41a53f5d687ae1a33cf546d0ed8be955f72e5f9e97b2b4e45e41dff3353b97"),
        "boot/vmlinuz-6.1.0-50-cloud-arm64"),
    # Checked 2026-12-01 (trixie, arm64 Packages index: Size and SHA256 below; the archive served
    # it). Debian's generic arm64 flavour: vmlinuz is an uncompressed arm64 Image (37,732,288
    # bytes) and the package ships 1,023 DTBs, among them rockchip/rk3588-rock-5b.dtb (the cloud
    # flavour has none). bookworm's generic linux-image-6.1.0-50-arm64 6.1.176-1 ships 14
    # rockchip/rk356x DTBs and no rk3588 one (checked the same day; Rock 5B's came in 6.3).
    "linux-image-6.12.117+deb13-arm64": KernelDeb(
        "linux-image-6.12.117+deb13-arm64", "6.12.117-1", "trixie",
        sources.SourceFile("linux-image-6.12.117+deb13-arm64_6.12.117-1_arm64.deb", 93_443_312,
                           "73805585385c78e048e63fdfba66da36bab724c2cdebd96a3055a8a4f1ae287a"),
        "boot/vmlinuz-6.12.117+deb13-arm64"),
}


@dataclass(frozen=True)
class AptArm64Site(sources.Site):
    """`apt-get download PACKAGE=VERSION` for arm64 through a private apt state under the cache."""

    package: str
    version: str
    suite: str
    label = "debian-arm64"

    def describe(self) -> str:
        return f"Debian arm64 package {self.package}={self.version} ({self.suite})"

    def fetch(self, file, dest_dir, log):
        state = paths.download_dir() / ".apt" / f"{self.suite}-arm64"
        options = sources.private_apt_state(state, "deb", f"{self.suite} {self.suite}-updates",
                                            architecture="arm64")
        plan.run_command(["apt-get", *options, "update", "-qq"], log=log)
        got = plan.run_command(["apt-get", *options, "download", f"{self.package}={self.version}"],
                               cwd=dest_dir, log=log, check=False)
        if got.returncode != 0:
            why = got.stdout.decode(errors="replace").strip().splitlines()
            raise SeedfwError(why[-1] if why else f"apt-get download exited {got.returncode}")
        debs = list(Path(dest_dir).glob("*.deb"))
        if len(debs) != 1:
            raise SeedfwError(f"apt-get download left {len(debs)} .deb files")
        return debs[0].rename(Path(dest_dir) / file.name)


def kernel_source(k: KernelDeb) -> sources.Source:
    return sources.Source(name="linux-image", version=k.version, files=(k.file,),
                          sites=(sources.MirrorDirSite(), AptArm64Site(k.package, k.version, k.suite)),
                          archive=k.file.name)


def fetch(k: KernelDeb, log=None, progress=print) -> Path:
    """The verified .deb; when no site has it, one line naming the pin and how to update it."""
    try:
        return sources.fetch(kernel_source(k), log=log, progress=progress)[k.file.name]
    except SeedfwError as exc:
        if "sha256 mismatch" in exc.message:
            raise
        raise SeedfwError(
            f"pinned kernel package {k.package}={k.version} ({k.file.name}, sha256 "
            f"{k.file.sha256[:12]}) is neither in the mirror nor in the Debian archive any more; "
            f"put the .deb into $SEEDFW_MIRROR_DIR/debian/, or pin the archive's current version "
            f"(apt-cache policy {k.package}) in tools/seedfw/parts/kernel.py KERNELS",
            Path(__file__), "KERNELS") from None


class KernelPart(Part):
    """Linux for the OS boot: images/Image (+ images/kernel.config, and the board's device tree,
    board.yaml boot.dtb, role board-dtb) from a pinned Debian .deb.

    Kconfig symbols read: KERNEL (enables it), KERNEL_PACKAGE (a key of KERNELS).
    Steps: kernel.extract (the .deb, verified, fetched into the shared cache unless there;
    only the image, its config and the pin's DTBs unpacked, into images/).
    """

    name = "kernel"
    symbols = ("KERNEL", "KERNEL_PACKAGE")
    VERSION = "2"                # 2: the pin's DTBs

    def sbom(self, ctx):
        k = KERNELS[ctx.values.get("KERNEL_PACKAGE")]
        deb = fetch(k, progress=lambda m: None)
        from ..sbom import model
        upstream = k.version.split("-")[0]          # 6.12.117-1: Debian revision 1 of 6.12.117
        return [self.component("linux", upstream, "GPL-2.0-only WITH Linux-syscall-note", [deb],
                               "operating-system", supplier="Debian (linux source package)",
                               purl=model.purl("deb", k.package, k.version, namespace="debian",
                                               arch="arm64"),
                               properties={"debian:package": k.package,
                                           "debian:version": k.version},
                               note=f"Debian binary package {k.package}; its source is Debian's "
                                    f"linux source package {k.version}")]

    provides = ("kernel", "kernel-config", "board-dtb")
    when = "KERNEL=y"

    def enabled(self, ctx):
        return bool(ctx.values.get("KERNEL"))

    def pin(self, ctx: BuildContext) -> KernelDeb:
        name = ctx.values.get("KERNEL_PACKAGE") or ""
        if name not in KERNELS:
            raise SeedfwError(f"kernel package '{name}' is not pinned (pinned: "
                              f"{', '.join(KERNELS)})", ctx.outdir / ".config",
                              "CONFIG_KERNEL_PACKAGE")
        return KERNELS[name]

    def dtbs(self, ctx: BuildContext) -> tuple[str, ...]:
        """The board's DT (board.yaml boot.dtb) inside the package, under the kernel's dtb
        directory; () for boards whose DT comes from elsewhere (QEMU's)."""
        want = ctx.board.boot.get("dtb")
        return (f"usr/lib/linux-image-{self.pin(ctx).release}/{want}",) if want else ()

    def outputs(self, ctx):
        # The DT is not declared as read at boot: what the board reads is the copy the OS stage
        # made of it (seedfw.parts.os_boot_files applies the OPP overlay to it).
        step = "kernel.extract"
        return [Output(ctx.images / "Image", step, ("kernel",), kind="kernel",
                       read_by="U-Boot (booti) or QEMU -kernel",
                       location="boot partition / loaded into RAM", qemu="kernel",
                       qemu_modes=("os",)),
                Output(ctx.images / "kernel.config", step, ("kernel-config",)),
                *(Output(ctx.images / Path(d).name, step, ("board-dtb",)) for d in self.dtbs(ctx))]

    def steps(self, ctx):
        k = self.pin(ctx)
        say = lambda m: ctx.progress(f"  kernel: {m}")     # noqa: E731

        def extract(step):
            deb = fetch(k, step.log, say)
            work = self.fresh_dir(ctx.build_dir("kernel"))
            members = [k.image, f"boot/config-{k.release}", *self.dtbs(ctx)]
            # Only these members (the generic package unpacks to 174 MB); a missing one is
            # named by the check below, so tar's own exit status is not the error.
            plan.run_command(["sh", "-c", 'deb="$1" work="$2"; shift 2; dpkg-deb --fsys-tarfile '
                              '"$deb" | tar -x -C "$work" "$@"', "sh", deb, work,
                              *(f"./{m}" for m in members)], log=step.log, check=False)
            image, config, *dtbs = (work / m for m in members)
            for f in (image, config, *dtbs):
                if not f.is_file():
                    raise SeedfwError(f"{k.file.name} has no {f.relative_to(work)}", deb)
            with open(image, "rb") as f:
                head = f.read(64)
            if head[56:60] != b"ARM\x64":        # arm64 Image header magic
                raise SeedfwError(f"{k.image} is not an uncompressed arm64 Image", deb)
            say(f"{k.package} {k.version}: Image {image.stat().st_size:,} bytes"
                + "".join(f", {d.name} {d.stat().st_size:,} bytes" for d in dtbs))
            self.install(step, {"Image": image, "kernel.config": config,
                                **{d.name: d for d in dtbs}}, ctx.images)

        return [plan.Step("kernel.extract", extract, package=self.name, version=self.VERSION,
                          inputs={"pin": [k.package, k.version, k.file.sha256, *self.dtbs(ctx)]})]
