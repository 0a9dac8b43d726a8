"""`invoke inspect --help` prints inspect's help (seedfw.cli `_help_after_positional`).

Invoke 3.0.3 fills a task's missing positional argument with the next token before it looks for
the core --help flag (pyinvoke/invoke#982), so `invoke inspect --help` used to run inspect on a
file named "--help" (`error: --help: file not found`, exit 1). The fix keeps Invoke's parser and
sets the core help flag when the token it took as a positional is --help/-h.

Fast: each run is a real `invoke` process (tests/cli.py). The control is Invoke's own parser
without the fix, parsing the same argv: it still hands "--help" to the positional, so the test
fails if a future Invoke changes that (and the shim can go).
"""

from __future__ import annotations

import hashlib

import pytest

from cli import invoke

# Every format inspect reads, as a user looks for it in the help (written out here, not taken
# from seedfw.cli.images.FORMATS: the help is checked against what inspect really reads).
FORMATS = ("FIT (.itb)", "boot package (.pkg)", "GPT disk image", "u-boot-rockchip.bin",
           "-spi variant", "idbloader.img", "maskrom loader", "U-Boot environment",
           "RAUC bundle (.raucb)")


def _words(text: str) -> str:
    return " ".join(text.split())        # the help's columns wrap anywhere


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_inspect_help_after_the_task_prints_its_help(flag):
    proc = invoke("inspect", flag)
    assert (proc.returncode, proc.stderr) == (0, "")
    lines = proc.stdout.splitlines()
    assert lines[0] == "Usage: inv[oke] [--core-opts] inspect [--options] [other tasks here ...]"
    assert "  Read an image back and verify every hash in it." in lines
    text = _words(proc.stdout)
    for what in FORMATS:
        assert what in text, what
    assert "file not found" not in proc.stdout


def test_the_help_is_the_same_as_invokes_own_help_before_the_task():
    after, before = invoke("inspect", "--help"), invoke("--help", "inspect")
    assert before.returncode == 0 and after.stdout == before.stdout


def test_another_task_with_a_positional_prints_its_help_too():
    proc = invoke("flash", "--help")       # flash's BOARD is positional
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines()[0] == \
        "Usage: inv[oke] [--core-opts] flash [--options] [other tasks here ...]"
    assert "--[no-]verify" in proc.stdout and "--sector=STRING" in proc.stdout


def test_a_real_file_argument_is_still_inspected(tmp_path):
    from seedfw.images import package
    from seedfw.images.entries import Entry
    data = bytes(range(256)) * 4
    pkg = tmp_path / "sample.pkg"
    pkg.write_bytes(package.encode([Entry("blob", data)]))
    proc = invoke("inspect", pkg, "--json")
    assert proc.returncode == 0, proc.stderr
    import json
    doc = json.loads(proc.stdout)
    assert (doc["format"], doc["ok"]) == ("package", True)
    assert [(r["name"], r["size"], r["hash_ok"]) for r in doc["rows"]] == [("blob", 1024, True)]
    assert doc["verified_bytes"] >= 1024
    # ... and a file argument followed by --help is help, as Invoke always did.
    proc = invoke("inspect", pkg, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: inv[oke]")
    # Negative control: the same package with one byte of the entry flipped fails its hash.
    blob = bytearray(pkg.read_bytes())
    at = blob.index(data)
    blob[at + 100] ^= 1
    bad = tmp_path / "bad.pkg"
    bad.write_bytes(bytes(blob))
    assert hashlib.sha256(bytes(blob[at:at + 1024])).digest() != hashlib.sha256(data).digest()
    proc = invoke("inspect", bad)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == \
        f"error: {bad}: 1 entries failed verification: blob"


def test_invokes_parser_without_the_fix_takes_help_as_the_positional():
    """The control: the bug the shim works around is Invoke's, in the installed version."""
    from invoke.parser import Argument, Parser, ParserContext
    from invoke.parser.parser import ParseMachine
    import seedfw.cli   # noqa: F401  (installs the shim)

    def parse(handle):
        initial = ParserContext(args=[Argument(names=("help", "h"), optional=True)])
        task = ParserContext(name="inspect", args=[Argument(names=("image",), positional=True)])
        saved = ParseMachine.handle
        ParseMachine.handle = handle
        try:
            result = Parser(initial=initial, contexts=[task]).parse_argv(["inspect", "--help"])
        finally:
            ParseMachine.handle = saved
        return result[0].args["help"].value, result[1].args["image"].value

    assert ParseMachine.handle.seedfw_help_fix
    assert parse(ParseMachine.handle.__wrapped__) == (None, "--help")      # Invoke 3.0.3 alone
    assert parse(ParseMachine.handle) == ("inspect", "--help")            # with the shim
