"""Hostile configuration (issue 28): Kconfig strings that would be commands, models.yaml paths
that leave the tree, model files too large to read.

Every string symbol declares a grammar (`Grammar: KIND` in its help, kinds in
seedfw.config.grammar); a value off its grammar is refused by `invoke config` and `invoke build`
(both through config.resolve) naming the file:line it came from. The corpus cases run the CLI
under RLIMIT_AS = 1 GiB and a timeout (tests/hostile.py) and assert the exit code, the exact
error line and a time and memory bound; the negative control configures every shipped board.
"""

from __future__ import annotations

import ast
from pathlib import Path

import kconfiglib
import pytest

import hostile
from seedfw import boards, config
from seedfw.config import grammar
from seedfw.errors import SeedfwError

ROOT = Path(__file__).resolve().parents[1]
TIME_BOUND = 20.0          # seconds per case (as tests/test_hostile_inputs.py)
RSS_BOUND_MIB = 512


def _fragment(tmp: Path, *lines: str) -> Path:
    f = tmp / "x.fragment"
    f.write_text("".join(f"{line}\n" for line in lines))
    return f


# ---- the grammar is declared, for every string symbol ------------------------------------------

def test_every_string_symbol_declares_a_known_grammar():
    seen = {}
    for board in boards.names():
        kconf = config.load_kconfig(board)
        for sym in kconf.unique_defined_syms:
            if sym.orig_type == kconfiglib.STRING:
                seen[sym.name] = grammar.declared(sym)
    assert len(seen) >= 29                       # BOARD, TFA_PLATFORM, ... every string symbol
    assert {n: k for n, k in seen.items() if k not in grammar.KINDS} == {}
    assert seen["TFA_PLATFORM"] == "tfa-platform" and seen["BUILDROOT_CONSOLE"] == "tty"


def _tree(tmp: Path, body: str) -> kconfiglib.Kconfig:
    (tmp / "Kconfig").write_text(body)
    return kconfiglib.Kconfig(str(tmp / "Kconfig"), warn_to_stderr=False)


def test_a_string_symbol_without_grammar_is_refused_naming_its_line(tmp_path):
    kconf = _tree(tmp_path, 'config A\n\tstring "a"\n\thelp\n\t  Grammar: path\n\n'
                            'config B\n\tstring "b"\n\thelp\n\t  No grammar here.\n')
    with pytest.raises(SeedfwError) as exc:
        grammar.kinds_of(kconf)
    assert exc.value.line() == (f"{tmp_path}/Kconfig:6: string symbol CONFIG_B declares no "
                                "grammar (a 'Grammar: KIND' line in its help; "
                                "docs/configuration.md)")


def test_an_unknown_grammar_is_refused(tmp_path):
    kconf = _tree(tmp_path, 'config A\n\tstring "a"\n\thelp\n\t  Grammar: anything\n')
    with pytest.raises(SeedfwError) as exc:
        grammar.kinds_of(kconf)
    assert exc.value.line().startswith(f"{tmp_path}/Kconfig:1: CONFIG_A: unknown grammar "
                                       "'anything' (known: board, br2-assignments, ")


def test_a_default_off_its_grammar_is_named_by_its_kconfig_line(tmp_path):
    kconf = _tree(tmp_path, 'config A\n\tstring "a"\n\tdefault "x;reboot"\n\thelp\n'
                            '\t  Grammar: identifier\n')
    with pytest.raises(SeedfwError) as exc:
        grammar.check_resolved(kconf, grammar.kinds_of(kconf), {})
    assert exc.value.line() == (f'{tmp_path}/Kconfig:1: CONFIG_A: "x;reboot" is not a '
                                "lower-case identifier ([a-z0-9_]+)")


@pytest.mark.parametrize("name", sorted(grammar.KINDS))
def test_every_kind_takes_its_example_and_refuses_commands(name):
    kind = grammar.KINDS[name]
    assert kind.accepts(kind.example)
    grammar.check("X", kind.example, kind, "f", 1)
    for bad in ("$(shell id)", "`id`", ";id", "\nid", "$$(id)", "${HOME}"):
        for value in (kind.example + bad, bad + kind.example):
            with pytest.raises(SeedfwError) as exc:
                grammar.check("X", value, kind, "f", 1)
            assert exc.value.line().startswith("f:1: CONFIG_X: ")


def test_shipped_word_values_still_fit():
    # What the tree's tests and docs write (tests/test_config.py, test_part_deps.py).
    make_vars, br2 = grammar.KINDS["make-vars"], grammar.KINDS["br2-assignments"]
    assert make_vars.accepts('ENABLE_X=1 Y="z"') and not make_vars.accepts("LOG_LEVEL=40 oops")
    assert br2.accepts('BR2_TARGET_GENERIC_GETTY_TERM=\\"vt102\\"')
    assert br2.accepts("BR2_PACKAGE_BUSYBOX_SHOW_OTHERS=y")
    assert not br2.accepts("BR2_TARGET_GENERIC_HOSTNAME=box|reboot")
    remote = grammar.KINDS["ccache-remote"]
    assert remote.accepts("redis://127.0.0.1:6390 http://127.0.0.1:8080/cache|layout=flat")
    assert not remote.accepts("redis://u:p@h:1 'ftp://x'")


# ---- no value is interpolated into a shell string ----------------------------------------------

def _calls(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def test_no_shell_strings_in_the_library():
    """shell=True nowhere, no os.system/os.popen; every `sh -c` script is a constant (values
    reach it only as "$1"... positional arguments, never pasted into the script)."""
    bad = []
    for path in sorted((ROOT / "tools" / "seedfw").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                  for t in n.targets if isinstance(t, ast.Name)}
        where = path.relative_to(ROOT)
        for call in _calls(tree):
            for kw in call.keywords:
                if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant)
                                              and kw.value.value is False):
                    bad.append(f"{where}:{call.lineno}: shell=")
            f = call.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                    f.value.id == "os" and f.attr in ("system", "popen"):
                bad.append(f"{where}:{call.lineno}: os.{f.attr}")
        for node in ast.walk(tree):
            if not isinstance(node, ast.List):
                continue
            elts = node.elts
            for i in range(len(elts) - 2):
                if isinstance(elts[i], ast.Constant) and elts[i].value in ("sh", "bash") and \
                        isinstance(elts[i + 1], ast.Constant) and elts[i + 1].value == "-c":
                    script = elts[i + 2]
                    ok = (isinstance(script, ast.Constant) and isinstance(script.value, str)) \
                        or (isinstance(script, ast.Name) and script.id in consts)
                    if not ok:
                        bad.append(f"{where}:{node.lineno}: sh -c with a computed script")
    assert bad == []


def test_the_shell_check_sees_an_interpolated_script(tmp_path):
    """Negative control of the check above: the patterns it refuses, in a file it parses."""
    src = ('import subprocess\nv = "x"\nsubprocess.run(f"make {v}", shell=True)\n'
           'subprocess.run(["sh", "-c", f"echo {v}"])\n')
    tree = ast.parse(src)
    shells = [c for c in _calls(tree) if any(k.arg == "shell" for k in c.keywords)]
    lists = [n for n in ast.walk(tree) if isinstance(n, ast.List)
             and isinstance(n.elts[2], ast.JoinedStr)]
    assert len(shells) == 1 and len(lists) == 1


# ---- the corpus: one case per class, through the CLI -------------------------------------------

def _bounded(*args):
    run = hostile.invoke_bounded(*args, timeout=60)
    assert run.seconds < TIME_BOUND and run.max_rss_mib < RSS_BOUND_MIB, \
        (run.seconds, run.max_rss_mib)
    assert "Traceback" not in run.stderr
    return run


def _one_error(run) -> str:
    lines = hostile.error_lines(run)
    assert run.returncode == 1 and len(lines) == 1, (run.returncode, run.stderr)
    return lines[0]


def test_tfa_platform_with_make_shell_is_refused_by_config_and_build(tmp_path):
    pwned = tmp_path / "pwned"
    f = _fragment(tmp_path, "# a fragment from a pull request", "CONFIG_TFA_DEBUG=y",
                  f'CONFIG_TFA_PLATFORM="rk3588$(shell id > {pwned})"')
    line = (f'error: {f}:3: CONFIG_TFA_PLATFORM: "rk3588$(shell id > {pwned})" is not a TF-A '
            "platform name ([a-z0-9_]+)")
    out = tmp_path / "out"
    assert _one_error(_bounded("config", "--board", "rk3588", "--output", out,
                               "--fragment", f)) == line
    assert not (out / ".config").exists()
    assert _one_error(_bounded("build", "--board", "rk3588", "--output", out,
                               "--fragment", f)) == line
    assert not (out / "stamps").exists() and not (out / ".config").exists()
    assert not pwned.exists()


def test_buildroot_console_with_backquotes_is_refused(tmp_path):
    f = _fragment(tmp_path, "CONFIG_BUILDROOT_CONSOLE=\"ttyS2`touch /tmp/x`\"")
    run = _bounded("config", "--board", "rk3588", "--output", tmp_path / "out", "--fragment", f)
    assert _one_error(run) == (f'error: {f}:1: CONFIG_BUILDROOT_CONSOLE: "ttyS2`touch /tmp/x`" '
                               "is not a tty device name ([A-Za-z][A-Za-z0-9_]*, at most 32 "
                               "characters)")


def test_a_hostname_with_a_semicolon_is_refused(tmp_path):
    f = _fragment(tmp_path, 'CONFIG_CCACHE_REMOTE_STORAGE="redis://cache;reboot:6379"')
    run = _bounded("config", "--board", "qemu-aarch64", "--output", tmp_path / "out",
                   "--fragment", f)
    assert _one_error(run) == (
        f'error: {f}:1: CONFIG_CCACHE_REMOTE_STORAGE: "redis://cache;reboot:6379" is not a '
        "list of ccache remote storage URLs (space-separated URL[|attribute=value] of "
        "[A-Za-z0-9_.,:/+@%=~-[]|])")
    f = _fragment(tmp_path, 'CONFIG_BUILDROOT_EXTRA_CONFIG="BR2_TARGET_GENERIC_HOSTNAME=box;id"')
    run = _bounded("config", "--board", "rk3588", "--output", tmp_path / "out", "--fragment", f)
    assert _one_error(run) == (
        f'error: {f}:1: CONFIG_BUILDROOT_EXTRA_CONFIG: "BR2_TARGET_GENERIC_HOSTNAME=box;id" is '
        "not a list of Buildroot assignments (shell-quoted words BR2_NAME=value, value "
        '[A-Za-z0-9_.,:/+@%=~-]* or "[A-Za-z0-9_.,:/+@%=~- ]*")')


def test_a_handed_over_user_fragment_is_refused_naming_it(tmp_path):
    """An output directory someone else made: its user.fragment (menuconfig's changes) is read
    like any fragment."""
    out = tmp_path / "out"
    out.mkdir()
    (out / config.USER_FRAGMENT).write_text('CONFIG_OS_MODULES="ext4 $(reboot)"\n')
    run = _bounded("config", "--board", "rk3588", "--output", out)
    assert _one_error(run) == (f'error: {out}/user.fragment:1: CONFIG_OS_MODULES: '
                               '"ext4 $(reboot)" is not a list of kernel module names '
                               "(space-separated [A-Za-z0-9_-]+)")


def test_a_board_tfa_platform_with_make_shell_is_refused(tmp_path):
    """board.yaml's tfa.platform is CONFIG_TFA_PLATFORM's fallback: the same grammar."""
    b = tmp_path / "rk3588" / "board.yaml"
    b.parent.mkdir()
    text = (ROOT / "board" / "rk3588" / "board.yaml").read_text()
    assert "  platform: rk3588\n" in text
    b.write_text(text.replace("  platform: rk3588\n", '  platform: "rk3588$(shell id)"\n', 1))
    line = text[:text.index("  platform: rk3588")].count("\n") + 1
    assert _one_error(_bounded("boards", "--check", b)) == (
        f"error: {b}:{line}: field 'tfa.platform': 'rk3588$(shell id)' does not match "
        "'^[a-z0-9_]+$'")


def _compile_manifest(tmp: Path, onnx: str) -> Path:
    m = tmp / "models.yaml"
    m.write_text("target: rk3588\nmodels:\n  - name: m\n    type: rknn\n    compile:\n"
                 f"      source: {{onnx: {onnx}}}\n      calibration: {{recipe: digits}}\n"
                 "      input: {name: x, shape: [1, 1, 8, 8]}\n      mean: [0]\n      std: [1]\n"
                 "      metric: top1\n")
    return m


def test_models_compile_source_onnx_is_confined(tmp_path):
    m = _compile_manifest(tmp_path, "/etc/shadow")
    run = _bounded("models", "--manifest", m)
    assert _one_error(run) == (f"error: {m}:3: model 'm': compile.source.onnx: path "
                               f"'/etc/shadow' must be relative to {tmp_path.name}/ without '..'")
    m = _compile_manifest(tmp_path, "../../../../etc/passwd")
    assert _one_error(_bounded("models", "--manifest", m)) == (
        f"error: {m}:3: model 'm': compile.source.onnx: path '../../../../etc/passwd' must be "
        f"relative to {tmp_path.name}/ without '..'")
    (tmp_path / "link.onnx").symlink_to("/etc/passwd")
    m = _compile_manifest(tmp_path, "link.onnx")
    assert _one_error(_bounded("models", "--manifest", m)) == (
        f"error: {m}:3: model 'm': compile.source.onnx: path 'link.onnx' leads out of "
        f"{tmp_path.name}/ (through a symlink, to /etc/passwd); set "
        "SEEDFW_ALLOW_OUTSIDE_PATHS=1 to allow it")


def test_a_3_gib_sparse_onnx_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.onnx"
    with open(big, "wb") as f:
        f.truncate(3 << 30)                      # truncate -s 3G: no disk blocks
    m = _compile_manifest(tmp_path, "big.onnx")
    assert _one_error(_bounded("models", "--manifest", m)) == (
        f"error: {m}:3: model 'm': cannot read big.onnx: 3221225472 bytes is over the 256 MiB "
        "limit for model inputs")
    p = tmp_path / "plain.yaml"
    p.write_text("models:\n  - {name: m, path: big.onnx, type: onnx}\n")
    assert _one_error(_bounded("models", "--manifest", p)) == (
        f"error: {p}:2: model 'm': cannot read big.onnx: 3221225472 bytes is over the 256 MiB "
        "limit for model inputs")


@pytest.mark.parametrize("board", boards.names())
def test_negative_control_every_shipped_board_configures(board, tmp_path):
    run = _bounded("config", "--board", board, "--output", tmp_path / "out")
    assert run.returncode == 0 and hostile.error_lines(run) == [], run.stderr
    assert run.stdout.startswith(f"configured {board}: ")
    values = config.load_values(tmp_path / "out")
    kinds = grammar.kinds_of(config.load_kconfig(board))
    for name, value in values.items():
        if name in kinds:
            grammar.check(name, value, kinds[name], "config.json", 1)


def test_every_kind_is_documented():
    text = (ROOT / "docs" / "configuration.md").read_text()
    assert [k for k in grammar.KINDS if f"| `{k}` |" not in text] == []
