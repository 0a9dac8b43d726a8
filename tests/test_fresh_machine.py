"""The README's two commands are all a fresh machine gets (issue 27).

The first line installs the `test` extra and runs `invoke setup`; the second is `invoke test`. So
whatever else the suite imports must come from `invoke setup` (host.PY_NEEDS), `invoke doctor`
must fail while it is missing, and CI (`.ci/run`) must run those very lines with no install of its
own — wave 3's CI installed the `docs` extra itself and hid six docs tests that errored on a
fresh machine.
"""

from __future__ import annotations

import re
import shlex
import sys
import tomllib
from importlib import metadata

import pytest

from seedfw import host
from seedfw.errors import SeedfwError

from cli import ROOT, invoke
from test_readme import quick_start_lines


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower()


def ci_lines() -> list[str]:
    return [l.strip() for l in (ROOT / ".ci" / "run").read_text().splitlines()
            if l.strip() and not l.strip().startswith("#")]


def test_setup_installs_every_extra_the_readme_line_does_not():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    wanted = sorted(req for name, reqs in extras.items() if name != "test" for req in reqs)
    assert sorted(req for _m, req, _w in host.PY_NEEDS) == wanted
    assert "pip install -e '.[test]'" in quick_start_lines()[0]


def test_each_python_need_names_the_module_its_requirement_ships():
    """`material` is mkdocs-material's module: a wrong module name would make setup reinstall
    forever or the doctor pass on the wrong package."""
    owners = metadata.packages_distributions()
    checked = 0
    for module, req, _why in host.PY_NEEDS:
        if module in owners:
            assert _name(req) in {d.lower() for d in owners[module]}, (module, req)
            checked += 1
    if not checked:
        pytest.skip("no Python extra installed here to check against")


def test_ci_runs_the_readme_commands_verbatim_and_installs_nothing_else():
    ci, quick = ci_lines(), quick_start_lines()
    assert [q for q in quick if q not in ci] == []
    installs = [l for l in ci if re.search(r"pip install|apt-get (install|update)", l)]
    assert installs == [quick[0]]
    # In the README's order: setup and the build before the suite.
    assert ci.index(quick[0]) < ci.index(quick[1])


def test_invoke_test_always_prints_the_30_slowest_tests():
    for args in ([], ["--fast"], ["-k", "nothing", "-x"]):
        res = invoke("--dry", "test", *args)
        assert res.returncode == 0, res.stderr
        line = re.sub(r"\x1b\[[0-9;]*m", "", res.stdout).strip()
        argv = shlex.split(line)
        assert argv[1:4] == ["-m", "pytest", "--durations=30"], line


def test_doctor_fails_on_a_missing_python_extra(monkeypatch, capsys):
    """Negative control: a Python need that is not installed fails the doctor with the line to run
    (before issue 27 the doctor printed it and passed)."""
    monkeypatch.setattr(host, "PY_NEEDS", [
        ("seedfw_no_such_module", "seedfw-no-such-dist>=1", "test: negative control")])
    from seedfw.host import doctor as doc
    monkeypatch.setattr(doc, "missing_packages", lambda checks: [])      # apt rows: not this test
    from seedfw.cli.host import _doctor
    with pytest.raises(SeedfwError) as err:
        _doctor(quiet=True)
    out = capsys.readouterr().out
    assert "missing Python package seedfw_no_such_module (test: negative control)" in out
    assert str(err.value) == ("1 Python package(s) missing; run: invoke setup, or "
                              f"{shlex.quote(sys.executable)} -m pip install 'seedfw-no-such-dist>=1'")
