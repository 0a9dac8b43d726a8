"""Headless Chromium (Debian's `chromium`): a page as a reader's browser renders it.

`dump_dom(url)` is the DOM after the page's scripts ran; `screenshot(url, png)` what it shows.
Each call uses a fresh profile directory and no network services, so nothing is shared between
tests or fetched from outside (a page of ours that needs the network would show it broken).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage", "--hide-scrollbars"]


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed (Debian package chromium; run 'invoke setup')")
    return path


def _run(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="seedfw-chromium-") as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout)


def dump_dom(url: str, wait_ms: int = 1500) -> str:
    """The serialised DOM after `wait_ms` of virtual time (scripts ran, layout done)."""
    proc = _run([f"--virtual-time-budget={wait_ms}", "--dump-dom", url])
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def screenshot(url: str, png: Path, width: int = 1280, height: int = 900) -> Path:
    proc = _run([f"--window-size={width},{height}", "--virtual-time-budget=1500",
                 f"--screenshot={png}", url])
    assert proc.returncode == 0 and png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", \
        proc.stderr[-2000:]
    return png
