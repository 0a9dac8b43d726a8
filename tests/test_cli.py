"""The Invoke front: every task listed with a help line."""

from cli import invoke


def test_every_task_has_a_help_line():
    p = invoke("--list")
    assert p.returncode == 0, p.stderr
    rows = [l for l in p.stdout.splitlines()[1:] if l.strip()]
    names = [l.split()[0] for l in rows if l.startswith("  ") and not l.startswith("    ")]
    for expected in ["boards", "config", "menuconfig", "savedefconfig", "setup", "test"]:
        assert expected in names
    for row in rows:
        if row.startswith("  ") and not row.startswith("    "):
            assert len(row.split(None, 1)) == 2, f"task without help: {row}"
