"""Headless Chromium (Debian's `chromium`): a page as a reader's browser renders it.

`dump_dom(url)` is the DOM after the page's scripts ran; `screenshot(url, png)` what it shows;
`evaluate(url, js)` runs a script in the page as a reader's clicks and keys would.
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
    with tempfile.TemporaryDirectory(prefix="seedfw-chromium-",
                                     ignore_cleanup_errors=True) as profile:
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


def evaluate(url: str, expression: str, settle_s: float = 0.5, timeout: int = 180):
    """Open `url` and return the value of the JavaScript `expression` (awaited), through the
    DevTools protocol over a pipe (--remote-debugging-pipe: fds 3 and 4, no port opened).

    Waits for the page's load event (document.readyState "complete"), then `settle_s` for its
    scripts' own start-up; `timeout` is a host deadline for the whole exchange, generous, and
    when it expires the error says so (issue 27: no verdict may depend on the machine's speed)."""
    import json
    import os
    import select
    import time

    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()

    def fds():
        os.dup2(to_chrome_r, 3)
        os.dup2(from_chrome_w, 4)

    with tempfile.TemporaryDirectory(prefix="seedfw-chromium-",
                                     ignore_cleanup_errors=True) as profile:
        # A session of its own: its renderer and GPU helpers are ended with it, by group.
        proc = subprocess.Popen([chromium(), *FLAGS, f"--user-data-dir={profile}",
                                 "--remote-debugging-pipe", "about:blank"], preexec_fn=fds,
                                close_fds=False, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        state = {"id": 0, "buf": b""}
        deadline = time.monotonic() + timeout

        def call(method, params=None, session=None):
            state["id"] += 1
            msg = {"id": state["id"], "method": method, "params": params or {}}
            if session:
                msg["sessionId"] = session
            os.write(to_chrome_w, json.dumps(msg).encode() + b"\0")
            while time.monotonic() < deadline:
                while b"\0" in state["buf"]:
                    raw, state["buf"] = state["buf"].split(b"\0", 1)
                    reply = json.loads(raw)
                    if reply.get("id") == state["id"]:
                        assert "error" not in reply, reply
                        return reply["result"]
                ready, _, _ = select.select([from_chrome_r], [], [],
                                            max(0.0, deadline - time.monotonic()))
                if not ready:
                    break
                chunk = os.read(from_chrome_r, 1 << 20)
                assert chunk, "chromium closed the DevTools pipe"
                state["buf"] += chunk
            raise AssertionError(f"host deadline: chromium did not answer {method} within "
                                 f"{timeout} s ({url})")

        try:
            target = call("Target.createTarget", {"url": url})["targetId"]
            session = call("Target.attachToTarget", {"targetId": target,
                                                     "flatten": True})["sessionId"]
            while call("Runtime.evaluate", {"expression": "document.readyState",
                                            "returnByValue": True}, session)["result"].get(
                    "value") != "complete":
                assert time.monotonic() < deadline, \
                    f"host deadline: {url} did not finish loading within {timeout} s"
                time.sleep(0.1)
            time.sleep(settle_s)
            result = call("Runtime.evaluate", {"expression": expression, "awaitPromise": True,
                                               "returnByValue": True}, session)
            assert "exceptionDetails" not in result, result
            return result["result"].get("value")
        finally:
            import signal
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            os.close(to_chrome_w)
            os.close(from_chrome_r)
