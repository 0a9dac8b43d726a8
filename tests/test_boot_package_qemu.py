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
