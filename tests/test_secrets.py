"""Secrets never leave the environment (seedfw.secrets): redaction, home paths, and a real build.

Fast: redact() on every credential shape (userinfo, bare token, query parameters, ccache
attributes, a credential the environment holds that a tool echoes in its own words) with
credential-free URLs as the negative control; home_relative and scrub; `invoke config`
refusing a credential in a fragment (it would be copied into <out>/.config); the doctor and the
report's cache section showing a remote redacted.

Slow (one build of mps2-an385, the smallest board): the remote is given the way a credential
must be, in $CCACHE_REMOTE_STORAGE — one entry nobody listens on (127.0.0.1:1) and one live
redis-server that only accepts that user and password. The build warns once about the dead
one, really stores its objects in the live one (so the credential reached ccache), and then
no file under the output directory, no log and nothing the build printed contains the password
or an absolute home path.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from cli import invoke, one_error_line
from seedfw.cache import ccache
from seedfw import secrets

PASSWORD = "s3cr3t-pw"
DEAD = f"redis://seeduser:{PASSWORD}@127.0.0.1:1/"


@pytest.fixture(autouse=True)
def _no_secret_in_environment(monkeypatch):
    for name in secrets.SECRET_VARIABLES + secrets.SECRET_VALUE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# ---- redact ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, shown", [
    ("redis://seeduser:s3cr3t-pw@127.0.0.1:1/", "redis://seeduser:****@127.0.0.1:1/"),
    ("redis://p4ssw0rd@cache.example.com:6379/0|connect-timeout=50",      # ccache's PASSWORD@
     "redis://****@cache.example.com:6379/0|connect-timeout=50"),
    ("redis://:pw@h", "redis://:****@h"),
    ("https://ghp_token123@git.example/x.git", "https://****@git.example/x.git"),
    ("http://u:p@ss@h:8080/c", "http://u:****@h:8080/c"),        # an unencoded "@": last one
    ("http://u:p%40ss@h/c", "http://u:****@h/c"),
    ("http://h/c?password=pw&x=1", "http://h/c?password=****&x=1"),
    ("http://h/c?x=1&token=abc#f", "http://h/c?x=1&token=****#f"),
    ("https://h/o?X-Amz-Credential=AK%2F1&X-Amz-Signature=ab12",
     "https://h/o?X-Amz-Credential=****&X-Amz-Signature=****"),
    ("http://h/c?api_key=zz;access_token=yy", "http://h/c?api_key=****;access_token=****"),
    ("http://h|bearer-token=abc|layout=flat", "http://h|bearer-token=****|layout=flat"),
    ("http://h|header=Authorization=Basic_dTpw", "http://h|header=Authorization=****"),
    ("warning: remote storage redis://a:b@c:1 does not answer; redis://d:e@f too",
     "warning: remote storage redis://a:****@c:1 does not answer; redis://d:****@f too"),
    # negative controls: nothing to hide
    ("redis://127.0.0.1:6390", "redis://127.0.0.1:6390"),
    ("file:///srv/cc redis+unix:///run/r.sock|connect-timeout=50",
     "file:///srv/cc redis+unix:///run/r.sock|connect-timeout=50"),
    ("file:///home/a@b/cache", "file:///home/a@b/cache"),          # "@" in a path, not userinfo
    ("http://h/c?page=2&sort=name", "http://h/c?page=2&sort=name"),
    ("user@example.com wrote", "user@example.com wrote"),
    ("", ""),
])
def test_redact(text, shown):
    assert secrets.redact(text) == shown
    assert secrets.redact(shown) == shown                  # stable: redacted text stays as is
    assert secrets.has_credential(text) == (shown != text)


def test_redact_keeps_user_and_host_and_masks_only_the_secret():
    out = secrets.redact(DEAD)
    assert PASSWORD not in out and "seeduser" in out and "127.0.0.1:1" in out


def test_a_credential_the_environment_holds_is_masked_in_any_words(monkeypatch):
    """A tool that names the password outside a URL (or percent-decoded) is caught too; the
    negative control: without the variable the same words are left alone."""
    line = "AUTH s3cr3t-pw failed; s3cr3t pw; tried s3cr3t-pw again"
    assert secrets.redact(line) == line
    monkeypatch.setenv("CCACHE_REMOTE_STORAGE", "redis://seeduser:s3cr3t%2Dpw@127.0.0.1:1/")
    assert secrets.redact(line) == "AUTH **** failed; s3cr3t pw; tried **** again"
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE", "https://cache.lan/a?token=tok-9876")
    assert secrets.redact("GET /a?x=tok-9876") == "GET /a?x=****"
    assert secrets.scrub_bytes(b"saw tok-9876\n") == b"saw ****\n"
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_PASSWORD", "hunter2-registry")
    assert secrets.redact("login hunter2-registry ok") == "login **** ok"


def test_redact_is_linear_on_hostile_text():
    """No backtracking blow-up on long runs of the characters the patterns look at."""
    for text in ("a://" + "@" * 200_000, "x://" + "u:" * 100_000 + "@", "?" + "key" * 100_000,
                 "|header=" + "=" * 200_000, "a://" * 50_000 + "@h"):
        start = time.monotonic()
        secrets.redact(text)
        assert time.monotonic() - start < 2.0, text[:20]


# ---- home paths ------------------------------------------------------------------------------

def test_home_relative(monkeypatch, tmp_path):
    home = tmp_path / "home" / "alice"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SEEDFW_CACHE_DIR", str(tmp_path / "cache"))
    assert secrets.home_relative(home / ".cache" / "seedfw" / "ccache") == "~/.cache/seedfw/ccache"
    assert secrets.home_relative(str(home)) == "~"
    assert secrets.home_relative(str(home) + "x/y") == str(home) + "x/y"   # not under it
    assert secrets.home_relative(tmp_path / "cache" / "ccache") == "<seedfw cache>/ccache"
    assert secrets.home_relative("/usr/share/x") == "/usr/share/x"
    assert secrets.home_relative("relative/x") == "relative/x"
    # The account's own home too (sudo, or a test's HOME): nobody's user name in an artifact.
    import pwd
    own = pwd.getpwuid(os.getuid()).pw_dir
    if own != "/":
        assert secrets.home_relative(os.path.join(own, "x")) == "~/x"


def test_scrub_replaces_home_prefixes_only_at_path_starts(monkeypatch, tmp_path):
    home = str(tmp_path / "h")
    monkeypatch.setenv("HOME", home)
    line = f"$ tar -xf {home}/dl/q.tar -C /srv{home}/x O={home}/o '{home}' {home}x"
    assert secrets.scrub(line) == f"$ tar -xf ~/dl/q.tar -C /srv{home}/x O=~/o '~' {home}x"


def test_local_dir_in_ccache_json_has_no_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SEEDFW_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    s = ccache.settings({"CCACHE": True})
    assert secrets.home_relative(s.dir) == "~/.cache/seedfw/ccache"


# ---- where a remote is given -----------------------------------------------------------------

def test_the_environment_remote_wins_and_is_checked_as_the_environments(monkeypatch):
    monkeypatch.setenv("CCACHE_REMOTE_STORAGE", DEAD)
    s = ccache.settings({"CCACHE": True, "CCACHE_REMOTE_STORAGE": "redis://127.0.0.1:6390"})
    assert s.remote == (DEAD,) and s.shown == "redis://seeduser:****@127.0.0.1:1/"
    monkeypatch.setenv("CCACHE_REMOTE_STORAGE", "redis//u:pw@h")
    with pytest.raises(Exception) as err:
        ccache.settings({"CCACHE": True})
    assert (err.value.file, err.value.field) == (None, "environment CCACHE_REMOTE_STORAGE")
    assert err.value.message == ("'redis//u:pw@h' is not a ccache remote storage URL (scheme "
                                 "one of redis://, redis+unix://, http://, file://)")


def test_malformed_remote_errors_show_the_entry_redacted():
    with pytest.raises(Exception) as err:
        ccache.check_remote("redis://u:s3cr3t-pw@h:port")
    assert err.value.message == "'redis://u:****@h:port': expected redis://HOST[:PORT]"


def test_config_refuses_a_credential_in_a_fragment(tmp_path):
    frag = tmp_path / "team.fragment"
    frag.write_text(f'CONFIG_BUILD_ID="x"\nCONFIG_CCACHE_REMOTE_STORAGE="{DEAD}"\n')
    p = invoke("config", "--board", "mps2-an385", "--output", tmp_path / "out", "--fragment", frag)
    assert one_error_line(p) == (
        f"error: {frag}:2: CONFIG_CCACHE_REMOTE_STORAGE: 'redis://seeduser:****@127.0.0.1:1/' "
        "holds a credential, which the output directory's .config would keep: give it in the "
        "environment instead (CCACHE_REMOTE_STORAGE='...'), never in a configuration file")
    assert PASSWORD not in p.stdout + p.stderr
    assert not (tmp_path / "out" / ".config").exists()
    # Negative control: the same remote without its credential is accepted.
    frag.write_text('CONFIG_BUILD_ID="x"\nCONFIG_CCACHE_REMOTE_STORAGE="redis://127.0.0.1:1/"\n')
    p = invoke("config", "--board", "mps2-an385", "--output", tmp_path / "out", "--fragment", frag)
    assert p.returncode == 0, p.stderr


def test_doctor_shows_the_environment_remote_redacted(tmp_path):
    env = dict(os.environ, CCACHE_REMOTE_STORAGE=DEAD)
    p = invoke("doctor", "--quiet", "--config", tmp_path / "none.config", env=env)
    assert ("warning: ccache remote redis://seeduser:****@127.0.0.1:1/ (environment "
            "CCACHE_REMOTE_STORAGE) does not answer (Connection refused): builds will use the "
            "local cache only") in p.stdout
    assert PASSWORD not in p.stdout + p.stderr


def test_report_cache_section_redacts_an_old_ccache_json(tmp_path):
    """A ccache.json written before redaction (or by hand) still shows no password."""
    from seedfw.report.sections.cache import Cache
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "ccache.json").write_text(json.dumps({
        "hits": 1, "misses": 1, "hit_rate": 0.5, "remote_hits": 0, "remote_misses": 1,
        "remote_read_bytes": None, "remote": DEAD, "remote_errors": 0,
        "remote_unreachable": {DEAD: "Connection refused"}, "local_dir": "/x", "parts": {},
        "source": "measured"}))
    section = Cache()
    # the section reads only outdir (and a bench result when one is given on the command line)
    inputs = type("Inputs", (), {"outdir": tmp_path, "ccache_bench": None})()
    data = section.data(inputs)
    text = json.dumps(data) + "\n".join(section.markdown(data)) + section.html(data)
    assert PASSWORD not in text
    assert data["remote"] == "redis://seeduser:****@127.0.0.1:1/"
    assert data["warnings"] == ["remote redis://seeduser:****@127.0.0.1:1/ did not answer at "
                                "build start (Connection refused): local cache only"]


# ---- a real build ----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_build_with_a_credentialed_remote_leaks_no_secret_and_no_home(tmp_path):
    redis = shutil.which("redis-server")
    if redis is None:
        pytest.skip("redis-server is not installed (invoke setup installs it)")
    port = _free_port()
    # Only seeduser with this password may use the server: the objects it ends up holding
    # prove the credential reached ccache.
    server = subprocess.Popen([redis, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path),
                               "--user", "seeduser", "on", f">{PASSWORD}", "~*", "+@all",
                               "--user", "default", "off"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    live = f"redis://seeduser:{PASSWORD}@127.0.0.1:{port}"
    try:
        for _ in range(200):
            if ccache.probe(live) is None:
                break
            time.sleep(0.05)
        home = tmp_path / "home"                  # the seedfw cache under a home directory
        home.mkdir()
        from seedfw import paths
        env = {k: v for k, v in os.environ.items()
               if k not in ("SEEDFW_CACHE_DIR", "XDG_CACHE_HOME")}
        env.update(HOME=str(home), CCACHE_REMOTE_STORAGE=f"{DEAD} {live}",
                   SEEDFW_DL_DIR=str(paths.download_dir()))     # the real home's: nothing fetched
        frag = tmp_path / "ccache.fragment"
        frag.write_text("CONFIG_CCACHE=y\n")
        out = tmp_path / "out"
        p = invoke("build", "--board", "mps2-an385", "--output", out, "--fragment", frag,
                   env=env)
        assert p.returncode == 0, p.stderr
        assert [line for line in (p.stdout + p.stderr).splitlines() if "ccache: warning" in line] \
            == ["  ccache: warning: remote storage redis://seeduser:****@127.0.0.1:1/ does not "
                "answer (Connection refused); building with the local cache only"]
        doc = ccache.summary(out)
        assert doc["remote"] == ("redis://seeduser:****@127.0.0.1:1/ "
                                 f"redis://seeduser:****@127.0.0.1:{port}")
        assert doc["remote_unreachable"] == {"redis://seeduser:****@127.0.0.1:1/":
                                             "Connection refused"}
        assert doc["local_dir"] == "~/.cache/seedfw/ccache"
        assert doc["remote_misses"] == doc["misses"] > 0 and doc["remote_errors"] == 0
        keys = subprocess.run(["redis-cli", "-p", str(port), "--user", "seeduser", "--pass",
                               PASSWORD, "--no-auth-warning", "dbsize"],
                              capture_output=True, text=True)
        if keys.returncode == 0:
            assert int(keys.stdout.strip()) >= doc["misses"]

        import pwd
        needles = {PASSWORD.encode(): "the password", str(home).encode(): "the test's HOME"}
        for h in {os.path.expanduser("~"), pwd.getpwuid(os.getuid()).pw_dir}:
            if h != "/":
                needles[h.rstrip("/").encode() + b"/"] = f"the home {h}"
        files = [f for f in sorted(out.rglob("*")) if f.is_file() and not f.is_symlink()]
        assert len(files) > 20 and any(f.suffix == ".elf" for f in files)
        assert (out / "report" / "report.md").is_file() and (out / "logs").is_dir()
        leaks = [f"{f.relative_to(out)}: {what}" for f in files
                 for needle, what in needles.items() if needle in f.read_bytes()]
        printed = (p.stdout + p.stderr).encode()
        leaks += [f"build output: {what}" for needle, what in needles.items() if needle in printed]
        assert leaks == []
    finally:
        server.terminate()
        server.wait(10)
