"""A good run says nothing alarming (issue 34).

For each board, what a user runs on a good day — `invoke build`, then `invoke run` (the firmware
boot in QEMU; rk3588: its OS on QEMU virt, as tests/test_os_root.py boots it), then `invoke
flash` (rk3588: `--to` a card-sized file) — must print no
`ERROR`, no `warning`, no `Traceback`, no raw escape byte and no `Broken pipe`, on stdout, stderr
or in the UART log the command wrote, except the lines of `ALLOWLIST`, each with its reason. A
new alarming line fails here with the command and the line.

Cheap: the build is `invoke build` into a fresh output directory, restored from the artifact
store that the session's build of the board (conftest.py fixtures) has just filled, so no step
compiles; run and flash use that directory, so the fixtures' own outputs stay untouched.

What a build prints only when a step really runs (the fetch lines of a fresh machine, the TF-A
compression line) is covered by the fast tests at the end, against the code that prints it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli import invoke
from seedfw import sources
# rk3588's "boot": the image's own kernel, initramfs and ext4 root on QEMU virt, exactly as
# tests/test_os_root.py boots it (its fixture and boot function, not a copy)
from test_os_root import boot as os_boot, os_parts  # noqa: F401  (os_parts: a fixture)

# What counts as alarming; the commands' own colour would be an escape too (they are not on a
# terminal here, so they print none).
ALARM = re.compile(r"ERROR|[Ww]arning|WARNING|Traceback|Broken pipe|\x1b")

# (pattern, reason): a line matching ALARM is accepted only if one of these matches it.
ALLOWLIST = [
    # U-Boot's environment has no valid copy on the storage yet, so U-Boot uses its built-in
    # default (qemu-aarch64 and rk3588), which is what a good first boot should do. It goes with
    # the field-update work (issue 29): the disk image gets a declared, CRC'd environment where
    # U-Boot's boot counter saves BOOT_ORDER; this entry is deleted with it. Not
    # CONFIG_ENV_IS_NOWHERE meanwhile: the boot counter needs `saveenv`.
    (re.compile(r"^Loading Environment from \S+\.\.\. \*\*\* Warning - bad CRC, using default "
                r"environment$"), "no environment written yet: the default one (issue 29)"),
]

FIXTURE = {"mps2-an385": "mps2_build", "qemu-aarch64": "qemu_aarch64_build",
           "rk3588": "rk3588_build", "rock5a": "rock5a_build"}
CARD_BOARDS = ("rk3588", "rock5a")       # flashed `--to` a card-sized file; booted on QEMU virt


@pytest.fixture(scope="module")
def rock5a_build(tmp_path_factory):
    """The session's rock5a build (tests/builds.py: one per session, shared with
    tests/test_os_rock5a.py, whose OS boot is checked by `alarming` there)."""
    import builds
    return builds.build_board("rock5a", tmp_path_factory)


def alarming(text: str) -> list[str]:
    """The lines of `text` that match ALARM and no ALLOWLIST entry."""
    return [line for line in text.splitlines()
            if ALARM.search(line) and not any(rx.search(line) for rx, _ in ALLOWLIST)]


def good_run(board: str, out: Path, tmp: Path) -> list[tuple[list[str], Path | None]]:
    """The commands of a good day on `board`, each with the UART log it writes (if any)."""
    steps = [(["build", "--board", board, "--output", out], None)]
    if board in CARD_BOARDS:        # their boots: test_rk3588_os_boot_is_clean, test_os_rock5a
        card = tmp / "card.img"
        with open(card, "wb") as f:
            f.truncate(256 << 20)               # a card bigger than the 128 MiB disk image
        steps.append((["flash", "--board", board, "--output", out, "--to", card], None))
    else:
        steps.append((["run", "--board", board, "--output", out], out / "logs" / "run.log"))
        probe = ["--probe", "qemu:auto"] if board == "mps2-an385" else []
        steps.append((["flash", "--board", board, "--output", out, *probe], None))
    return steps


@pytest.mark.slow
@pytest.mark.parametrize("board", sorted(FIXTURE))
def test_a_good_run_says_nothing_alarming(board, request, tmp_path):
    request.getfixturevalue(FIXTURE[board])     # the session's build: fills the artifact store
    out = tmp_path / "out"
    found = []
    for args, log in good_run(board, out, tmp_path):
        proc = invoke(*args, timeout=900)
        shown = "invoke " + " ".join(map(str, args))
        assert proc.returncode == 0, f"{shown}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
        texts = {"stdout": proc.stdout, "stderr": proc.stderr}
        if log is not None:
            texts[log.name] = log.read_text(errors="replace")
        found += [f"{shown} ({where}): {line!r}" for where, text in texts.items()
                  for line in alarming(text)]
    assert found == []


@pytest.mark.slow
def test_rk3588_os_boot_is_clean(os_parts):
    """The rk3588 OS in QEMU virt down to `agent: ok`: its whole console log (kernel, init,
    agent) has no alarming line either."""
    text, _ = os_boot(os_parts, os_parts["disk"], os_parts["initramfs.cpio"],
                      os_parts["dir"] / "clean-boot.log")
    assert "agent: ok" in text
    assert alarming(text) == []


# -- the checker itself, and what only a really running step prints (fast) ----------------------
def test_the_checker_catches_each_kind_and_keeps_the_allowlist():
    lines = ["ERROR:   QEMU System Power off: with GPIO.",
             "qemu-system-arm: warning: nic lan9118.0 has no peer",
             "\x1b[?25h", "Traceback (most recent call last):", "error: Broken pipe",
             "0002137 W T bit in XPSR is invalid; ... [cortex_m]  Warning"]
    assert alarming("\n".join(lines)) == lines
    allowed = "Loading Environment from Flash... *** Warning - bad CRC, using default environment"
    assert alarming(allowed + "\nok: fine") == []
    assert all(reason for _, reason in ALLOWLIST)


def test_a_missing_mirror_file_is_said_once_quietly(tmp_path, monkeypatch):
    """Mirror first, then a site that has the file: one line names the miss and the next site,
    no 'failed' line (a fresh build used to print one 'mirror failed: … does not exist' per
    file: 12 of them)."""
    import hashlib

    monkeypatch.setenv("SEEDFW_DL_DIR", str(tmp_path / "dl"))
    data = b"pinned content\n" * 100
    pin = sources.SourceFile("pkg-1.0.tar.xz", len(data), hashlib.sha256(data).hexdigest())
    empty, full = tmp_path / "empty", tmp_path / "full"
    empty.mkdir()
    full.mkdir()
    (full / pin.name).write_bytes(data)
    src = sources.Source("pkg", "1.0", (pin,), (sources.MirrorDirSite(str(empty)),
                                                 sources.UrlSite(f"file://{full}/{{name}}")),
                         archive=pin.name)
    said = []
    sources.fetch(src, progress=said.append)
    assert said[0] == (f"pkg-1.0.tar.xz: not in the local mirror {empty}; fetching from "
                       f"upstream file://{full}/{{name}}")
    assert len(said) == 2 and said[1].startswith("pkg-1.0.tar.xz: 1,500 bytes from upstream in ")
    # no mirror configured at all (a fresh machine): the miss is not worth a word
    monkeypatch.delenv("SEEDFW_MIRROR_DIR", raising=False)
    (tmp_path / "dl" / "pkg" / pin.name).unlink()
    said.clear()
    sources.fetch(sources.Source("pkg", "1.0", (pin,), (
        sources.MirrorDirSite(), sources.UrlSite(f"file://{full}/{{name}}")), archive=pin.name),
        progress=said.append)
    assert said[0] == f"pkg-1.0.tar.xz: fetching from upstream file://{full}/{{name}}"
    assert alarming("\n".join(said)) == [] and not any("failed" in s for s in said)


def test_a_flat_bl31_that_grows_says_why_it_is_kept():
    """The qemu-aarch64 build's TF-A line (`BL31 57508 -> 59838 B`) says why in the same line;
    rk3588's ELF BL31 shrinks and needs no word."""
    from seedfw.parts import tfa

    assert tfa.growth_note(57508, 59838, flat=True) == \
        "; larger: a flat image keeps the zeroed .rodata; kept as the decoder's boot-path proof"
    assert tfa.growth_note(147702, 145779, flat=False) == ""
