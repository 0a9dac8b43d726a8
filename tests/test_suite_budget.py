"""The suite on a budget (issue 27): the CLI runs of the fast tests are forked from a warm
interpreter (tests/warm.py) instead of starting `python -m invoke` afresh each time. These tests
are the end-to-end check that this changes nothing a test asserts: one case of each kind of
hostile input, and the common CLI outcomes, run both ways give the same exit code, error line and
output; and the per-case guards (RLIMIT_AS, the timeout kill, peak RSS, a clean environment) are
really per case."""

from __future__ import annotations

import os
import re

import pytest

import cli
import hostile
import warm

# A hex address or a temporary path differs between two runs of one case; nothing else may.
_VOLATILE = re.compile(r"0x[0-9a-f]{6,}|/tmp/pytest-of-[^\s'\"]+")


def _same(a: str, b: str) -> bool:
    return _VOLATILE.sub("*", a) == _VOLATILE.sub("*", b)


def _one_case_per_class():
    import test_hostile_inputs as corpus
    return [next(n for n in sorted(corpus.CASES) if n.startswith(cls + "_"))
            for cls in corpus.CLASSES]


@pytest.mark.parametrize("name", _one_case_per_class())
def test_a_hostile_case_forked_and_fresh_ends_alike(name, tmp_path):
    import test_hostile_inputs as corpus
    from seedfw.images import samples as samples_mod
    samples = samples_mod.make_all(tmp_path / "samples")
    args, rc, line, _check = corpus.CASES[name](tmp_path, samples)
    forked = hostile.invoke_bounded(*args, timeout=corpus.TIME_BOUND * 3)
    fresh = hostile.invoke_bounded(*args, timeout=corpus.TIME_BOUND * 3, real=True)
    assert forked.returncode == fresh.returncode == rc, (forked, fresh)
    assert hostile.error_lines(forked) == hostile.error_lines(fresh), (forked, fresh)
    assert _same(forked.stdout, fresh.stdout) and _same(forked.stderr, fresh.stderr)
    assert "Traceback" not in forked.stderr + fresh.stderr


@pytest.mark.parametrize("args", [
    ["--list"],                                          # exit 0, the task list
    ["nosuchtask"],                                      # invoke's own error, exit 1
    ["build", "--board", "../etc"],                      # seedfw's one error line, exit 1
    ["config", "--help"],                                # help text (invoke's parser)
], ids=["list", "unknown-task", "bad-board", "help"])
def test_cli_forked_and_fresh_print_the_same(args):
    forked, fresh = cli.invoke(*args, timeout=120), cli.invoke(*args, timeout=120, real=True)
    assert (forked.returncode, forked.stdout, forked.stderr) == \
        (fresh.returncode, fresh.stdout, fresh.stderr)


def test_each_case_gets_its_own_address_space_limit_and_a_clean_process():
    grab = "b = bytearray(1536 << 20); print(len(b))"        # 1.5 GiB: over the 1 GiB limit
    limited = warm.run_invoke([], code=grab, as_limit=hostile.AS_LIMIT, timeout=60)
    assert limited.returncode == 1 and b"MemoryError" in limited.stderr, limited
    # The next case in the same server has no limit left over, and its peak RSS is its own.
    free = warm.run_invoke([], code="b = bytearray(300 << 20); b[::4096] = b'x' * len(b[::4096])",
                           timeout=60)
    assert free.returncode == 0 and free.forked, free
    assert free.max_rss_kib >= 300 * 1024, free.max_rss_kib
    # An environment variable of one case is not seen by the next, nor the cwd.
    env = dict(os.environ, SEEDFW_BUDGET_PROBE="1")
    seen = warm.run_invoke([], code="import os; print(os.environ.get('SEEDFW_BUDGET_PROBE'))",
                           env=env, timeout=60)
    after = warm.run_invoke([], code="import os; print(os.environ.get('SEEDFW_BUDGET_PROBE'))",
                            timeout=60)
    assert (seen.stdout, after.stdout) == (b"1\n", b"None\n")


def test_a_hung_case_is_killed_at_its_timeout_and_the_next_runs():
    hung = warm.run_invoke([], code="import time; time.sleep(120)", timeout=1.0)
    assert hung.timed_out and hung.returncode == -9 and hung.seconds < 30, hung
    ok = warm.run_invoke(["--list"], timeout=120)
    assert ok.returncode == 0 and b"build" in ok.stdout
    with pytest.raises(AssertionError, match="took over"):
        hostile.invoke_bounded("--list", timeout=1e-3)        # the harness says so, as before


def test_sigint_ends_a_forked_run_as_it_ends_a_fresh_one():
    """An uncaught KeyboardInterrupt kills the process with SIGINT (status -2) in both."""
    code = "raise KeyboardInterrupt"
    assert warm.run_invoke([], code=code, timeout=60).returncode == -2


def test_buildroot_keeps_its_output_dir_only_for_added_packages(tmp_path):
    """The keep-or-clean decision of a Buildroot rebuild, which test_part_deps's slow test used to
    reach through a real clean Buildroot build (a BR2_ option change, ~250 s): packages added ->
    the dir is kept (incremental); a changed option -> removed (clean build), and said so."""
    from seedfw.parts.buildroot import BuildrootPart
    out = tmp_path / "buildroot"
    base = "BR2_aarch64=y\nBR2_DL_DIR=/a\nBR2_PACKAGE_BUSYBOX=y\n"
    said = []

    def prepared(previous, new):
        out.mkdir(exist_ok=True)
        (out / "marker").write_text("built")
        (out / ".seedfw-defconfig").write_text(previous)
        kept = BuildrootPart._prepare_output(out, new, said.append)
        assert kept == (out / "marker").is_file()
        return kept

    assert prepared(base, base + "BR2_PACKAGE_STRACE=y\n")              # a package added
    assert prepared(base, base.replace("/a", "/b"))                      # only where downloads are
    assert said == []
    assert not prepared(base, base + 'BR2_TARGET_GENERIC_GETTY_TERM="vt102"\n')   # an option
    assert not prepared(base, base.replace("BR2_PACKAGE_BUSYBOX=y\n", ""))      # one removed
    assert said == ["the Buildroot configuration changed beyond added packages: clean build"] * 2
    out.mkdir()                                                          # never configured: clean
    (out / "marker").write_text("half a build")
    assert BuildrootPart._prepare_output(out, base, said.append) is False and not out.exists()
