"""`invoke menuconfig` driven through a real pseudo-terminal, keys as a user types them."""

import json
import os
import pty
import select
import sys
import time

import pytest

from cli import ROOT, invoke


def drive(args, keys, settle=0.7):
    pid, fd = pty.fork()
    if pid == 0:                                    # child: the menuconfig process
        os.chdir(ROOT)
        os.environ["TERM"] = "xterm"
        os.execvp(sys.executable, [sys.executable, "-m", "invoke", *map(str, args)])
    screen = bytearray()

    def read(seconds):
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    screen.extend(os.read(fd, 65536))
                except OSError:
                    return

    read(3)
    for k in keys:
        os.write(fd, k)
        read(settle)
    read(2)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), screen.decode(errors="replace")


@pytest.mark.slow
def test_menuconfig_change_is_saved_and_replayed(tmp_path):
    out = tmp_path / "o"
    # Jump to TFA_DEBUG, set it, quit, answer "yes" to saving.
    code, screen = drive(["menuconfig", "--board", "qemu-aarch64", "--output", out],
                         [b"/", b"TFA_DEBUG", b"\r", b"y", b"Q", b"y"])
    assert code == 0, screen[-2000:]
    assert (out / "user.fragment").read_text() == "CONFIG_TFA_DEBUG=y\n"
    assert json.loads((out / "config.json").read_text())["TFA_DEBUG"] is True
    # A later plain `invoke config` replays the user's change on top of the defconfig.
    assert invoke("config", "--board", "qemu-aarch64", "--output", out).returncode == 0
    values = json.loads((out / "config.json").read_text())
    assert values["TFA_DEBUG"] is True and values["TFA_LOG_LEVEL"] == 40


@pytest.mark.slow
def test_menuconfig_quit_without_changes_keeps_nothing(tmp_path):
    out = tmp_path / "o"
    code, screen = drive(["menuconfig", "--board", "rk3588", "--output", out], [b"Q"])
    assert code == 0, screen[-2000:]
    assert "No changes to save" in screen
    assert (out / "user.fragment").read_text() == ""
