"""The QEMU proof of the boot package: the real TF-A chain boots our payload, which verifies the
package QEMU loaded at the board's boot-package region and prints one line per entry. The lines
must equal what the host-side writer expects; a corrupted twin must fail the boot."""

import json

import pytest

import builds

from seedfw import boards
from seedfw.run import payload as qemu
from seedfw.errors import SeedfwError

PREFIXES = ("pkg:", "dvfs", "model ", "firmware ", "fdt ")


def boot(outdir, log_name):
    return qemu.run(boards.get("qemu-aarch64"), outdir, timeout=120, echo=lambda s: None,
                    log=outdir / "logs" / log_name)


def uart_lines(outdir, log_name):
    return [l.strip() for l in (outdir / "logs" / log_name).read_text().splitlines()
            if l.strip().startswith(PREFIXES)]


@pytest.mark.slow
def test_payload_verifies_its_package_at_boot(qemu_aarch64_build):
    out = qemu_aarch64_build.outdir
    result = boot(out, "pkg-boot.log")
    assert result.returncode == 0
    expected = json.loads((out / "images" / "images.json").read_text())["package"]["expected_boot_lines"]
    assert uart_lines(out, "pkg-boot.log") == expected
    assert "model digits sha256 ok" in expected and expected[-1] == "pkg: ok"
    assert any(l.startswith("dvfs: 2 domains, 7 opps, profile=balanced, crc ok") for l in expected)


@pytest.mark.slow
def test_a_corrupted_package_fails_the_boot(qemu_aarch64_build, tmp_path):
    out = builds.copy_with_corrupted_model(qemu_aarch64_build, tmp_path / "out")
    with pytest.raises(SeedfwError) as failed:
        boot(out, "bad-boot.log")
    assert failed.value.message == "QEMU exited with status 1"
    lines = uart_lines(out, "bad-boot.log")
    assert "model digits sha256 BAD" in lines
    assert lines[-1] == "pkg: FAILED, 1 errors"


@pytest.fixture(scope="module")
def sha2_build(tmp_path_factory):
    frag = tmp_path_factory.mktemp("frag") / "sha2.fragment"
    frag.write_text("CONFIG_PAYLOAD_SHA256_ARMV8=y\n")
    return builds.build_board("qemu-aarch64", tmp_path_factory, [frag])


def counted_payload(outdir, what):
    from seedfw.counters import emulated

    board = boards.get("qemu-aarch64")
    f = emulated.default_file(outdir, what)
    qemu.run(board, outdir, timeout=300, echo=lambda s: None,
             extra_args=emulated.qemu_args(board, outdir, f), log=outdir / "logs" / f"{what}.log")
    return emulated.collect(board, outdir, f, what)["readings"]["phases"]["payload"]["instructions"]


@pytest.mark.slow
def test_sha2_payload_verifies_the_same_package_in_fewer_instructions(sha2_build,
                                                                     qemu_aarch64_build, tmp_path):
    """PAYLOAD_SHA256_ARMV8=y: the payload carries the SHA2 instructions (the default build none),
    prints the lines the host expects, fails a corrupted twin, and its counted payload phase
    is shorter than the portable build's (emulated instruction counts)."""
    import subprocess

    out = sha2_build.outdir
    for build, want in ((sha2_build, 16), (qemu_aarch64_build, 0)):
        dis = subprocess.run(["aarch64-linux-gnu-objdump", "-d", str(build.outdir / "images/bl33.elf")],
                             capture_output=True, text=True, check=True).stdout
        assert dis.count("\tsha256h\t") == want
    assert boot(out, "sha2-boot.log").returncode == 0
    expected = json.loads((out / "images" / "images.json").read_text())["package"]["expected_boot_lines"]
    assert uart_lines(out, "sha2-boot.log") == expected and expected[-1] == "pkg: ok"
    bad = builds.copy_with_corrupted_model(sha2_build, tmp_path / "out")
    with pytest.raises(SeedfwError):
        boot(bad, "bad-boot.log")
    assert "model digits sha256 BAD" in uart_lines(bad, "bad-boot.log")
    assert counted_payload(out, "sha2") < counted_payload(qemu_aarch64_build.outdir, "portable") / 2
