"""The artifact store's OCI remote (seedfw.cache.oci) against a real registry: Debian's
`docker-registry` (the distribution registry) on loopback, started per module with its storage in
a temporary directory, once without auth and once behind htpasswd. A small fake registry
(http.server) plays the hostile one: answers a real registry would never send."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from seedfw.cache import ArtifactCache, LocalStore
from seedfw.errors import SeedfwError

pytest.importorskip("oras", reason="the oci store needs oras (pip install -e '.[cache]')")
from seedfw.cache import oci, oci_client  # noqa: E402
from seedfw.cache.oci import OciStore  # noqa: E402

REGISTRY = shutil.which("docker-registry")
ROOT = Path(__file__).resolve().parents[1]
USER, PASSWORD = "seed-ci", "pw-7d1f-never-shown"
CAP = 1 << 30


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bcrypt(password: str) -> str:
    """An htpasswd line's hash (the registry takes bcrypt only)."""
    try:
        import bcrypt
        return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
    except ImportError:
        pass
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import crypt
        except ImportError:
            pytest.skip("no bcrypt for an htpasswd file (python3-bcrypt)")
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))


class Registry:
    """A docker-registry process on 127.0.0.1:<free port>, its storage under `root`."""

    def __init__(self, root: Path, auth: bool):
        if REGISTRY is None:
            pytest.skip("docker-registry is not installed (apt-get install docker-registry)")
        self.root = root
        self.port = _free_port()
        self.data = root / "data"
        lines = ["version: 0.1", "log:", "  level: error", "  accesslog:", "    disabled: true",
                 "storage:", "  filesystem:", f"    rootdirectory: {self.data}",
                 "  delete:", "    enabled: true",
                 "http:", f"  addr: 127.0.0.1:{self.port}", "  secret: test-only"]
        if auth:
            (root / "htpasswd").write_text(f"{USER}:{_bcrypt(PASSWORD)}\n")
            lines += ["auth:", "  htpasswd:", "    realm: seedfw-test",
                      f"    path: {root / 'htpasswd'}"]
        (root / "config.yml").write_text("\n".join(lines) + "\n")
        self.log = open(root / "registry.log", "w")
        self.proc = subprocess.Popen([REGISTRY, "serve", str(root / "config.yml")],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError("docker-registry did not listen within 15 s: "
                                         + (root / "registry.log").read_text())
                time.sleep(0.05)
        self.url = f"oci://127.0.0.1:{self.port}/seedfw/steps"

    def blob(self, sha: str) -> Path:
        return self.data / "docker/registry/v2/blobs/sha256" / sha[:2] / sha / "data"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    reg = Registry(tmp_path_factory.mktemp("registry"), auth=False)
    yield reg
    reg.stop()


@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory):
    reg = Registry(tmp_path_factory.mktemp("registry-auth"), auth=True)
    yield reg
    reg.stop()


@pytest.fixture(autouse=True)
def _no_credentials(monkeypatch, tmp_path):
    for var in ("SEEDFW_CACHE_REMOTE_USER", "SEEDFW_CACHE_REMOTE_PASSWORD",
                "SEEDFW_CACHE_REMOTE_INSECURE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker-config"))


def _outputs(tmp: Path, tag: str) -> tuple[Path, list[Path]]:
    out = tmp / f"out-{tag}"
    (out / "images").mkdir(parents=True)
    files = [out / "images" / "boot.img", out / "images" / "shared.bin", out / "tool.sh"]
    files[0].write_bytes(os.urandom(300_000) + tag.encode())
    files[1].write_bytes(b"the same in every record\n" * 1000)
    files[2].write_bytes(b"#!/bin/sh\necho " + tag.encode() + b"\n")
    files[2].chmod(0o755)
    return out, files


def _saved(tmp: Path, url: str, tag: str = "a") -> tuple[ArtifactCache, Path, list[Path], str]:
    """A step's outputs saved into a fresh local store and pushed to `url`: (cache, out, files,
    key)."""
    out, files = _outputs(tmp, tag)
    cache = ArtifactCache(LocalStore(tmp / f"store-{tag}", CAP), OciStore.from_url(url), True)
    cache.save("tfa", ArtifactCache.key(f"stamp-{tag}"), out, files,
               log=f"log of {tag}\n".encode())
    assert cache.notes == []
    return cache, out, files, ArtifactCache.key(f"stamp-{tag}")


def _store_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


# -- a real registry --------------------------------------------------------------------------

def test_push_then_pull_into_an_empty_store_gives_the_same_bytes(registry, tmp_path):
    _, out, files, key = _saved(tmp_path, registry.url)
    empty = LocalStore(tmp_path / "empty", CAP)
    record = OciStore.from_url(registry.url).pull(key, empty)
    assert record["key"] == key and record["step"] == "tfa"
    assert {f["path"] for f in record["files"]} == {"images/boot.img", "images/shared.bin",
                                                     "tool.sh"}
    for f in record["files"]:
        assert empty.blob_path(f["sha256"]).read_bytes() == (out / f["path"]).read_bytes()
    assert empty.get_record(key) == record
    assert empty.blob_path(record["log"]["sha256"]).read_bytes() == b"log of a\n"
    # and through the cache, as a build restores: the bytes and the mode of each file
    cache = ArtifactCache(LocalStore(tmp_path / "empty2", CAP), OciStore.from_url(registry.url))
    got = cache.restore("tfa", ArtifactCache.key("stamp-a"), tmp_path / "restored")
    assert got is not None and got.source == "oci" and got.files == 3
    assert got.log == b"log of a\n"                  # the log of the build that made them
    for tmp, final in got.moves:
        src = out / final.relative_to(tmp_path / "restored")
        assert tmp.read_bytes() == src.read_bytes()
        assert tmp.stat().st_mode & 0o777 == src.stat().st_mode & 0o777
        tmp.unlink()


def test_the_artifact_is_an_oci_manifest_tagged_by_the_key(registry, tmp_path):
    import requests
    _, out, _, key = _saved(tmp_path, registry.url, "layout")
    r = requests.get(f"http://127.0.0.1:{registry.port}/v2/seedfw/steps/manifests/{key}",
                     headers={"Accept": oci.MANIFEST_MEDIA_TYPE}, timeout=10)
    manifest = r.json()
    assert r.status_code == 200 and manifest["mediaType"] == oci.MANIFEST_MEDIA_TYPE
    assert manifest["config"]["mediaType"] == "application/vnd.seedfw.step-record.v1+json"
    assert manifest["annotations"] == {"seedfw.step": "tfa"}
    layers = {d["annotations"][oci.TITLE]: d for d in manifest["layers"]}
    assert set(layers) == {"images/boot.img", "images/shared.bin", "tool.sh", "tfa.log"}
    assert layers.pop("tfa.log")["mediaType"] == "application/vnd.seedfw.step-log.v1"
    for path, d in layers.items():
        assert d["mediaType"] == "application/vnd.seedfw.step-output.v1"
        assert d["digest"] == "sha256:" + hashlib.sha256((out / path).read_bytes()).hexdigest()


def test_blobs_the_registry_has_are_not_uploaded_again(registry, tmp_path, monkeypatch):
    _saved(tmp_path, registry.url, "first")
    out, files = _outputs(tmp_path, "second")        # shared.bin is the same as the first's
    store = OciStore.from_url(registry.url)
    uploaded = []
    client = store._client()
    real = client.put_upload
    monkeypatch.setattr(client, "put_upload",
                        lambda blob, *a, **k: uploaded.append(Path(blob).name)
                        or real(blob, *a, **k))
    cache = ArtifactCache(LocalStore(tmp_path / "store-second", CAP), store, True)
    cache.save("tfa", ArtifactCache.key("stamp-second"), out, files)
    shas = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    assert shas["shared.bin"] not in uploaded
    assert shas["boot.img"] in uploaded and shas["tool.sh"] in uploaded
    assert len(uploaded) == 3                         # and the record (a temporary file)
    cache.save("tfa", ArtifactCache.key("stamp-second"), out, files)   # all there: manifest only
    assert len(uploaded) == 3


def test_a_large_blob_goes_up_in_chunks(registry, tmp_path, monkeypatch):
    monkeypatch.setattr(oci, "CHUNK", 64 << 10)        # boot.img (300 kB) is "large": 5 PATCHes
    patches = []
    store = OciStore.from_url(registry.url)
    client = store._client()
    real = client.do_request
    monkeypatch.setattr(client, "do_request", lambda url, method="GET", *a, **k: (
        patches.append(len(k.get("data") or b"")) if method == "PATCH" else None)
        or real(url, method, *a, **k))
    out, files = _outputs(tmp_path, "chunked")
    cache = ArtifactCache(LocalStore(tmp_path / "a", CAP), store, True)
    cache.save("tfa", ArtifactCache.key("stamp-c"), out, files)
    assert patches == [64 << 10] * 4 + [300_007 - 4 * (64 << 10)]
    empty = LocalStore(tmp_path / "empty", CAP)
    record = OciStore.from_url(registry.url).pull(ArtifactCache.key("stamp-c"), empty)
    for f in record["files"]:
        assert empty.blob_path(f["sha256"]).read_bytes() == (out / f["path"]).read_bytes()


def test_a_blob_trimmed_before_the_push_is_one_line(registry, tmp_path):
    out, files = _outputs(tmp_path, "trimmed")
    local = LocalStore(tmp_path / "s", CAP)
    ArtifactCache(local, None).save("tfa", ArtifactCache.key("stamp-t"), out, files)
    record = local.get_record(ArtifactCache.key("stamp-t"))
    local.drop_blob(record["files"][0]["sha256"])      # a concurrent trim took it
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(registry.url + "/trimmed").push(record, local)
    assert exc.value.message == f"{registry.url}/trimmed: not pushed (No such file or directory)"


def test_a_miss_is_none_and_leaves_the_store_empty(registry, tmp_path):
    empty = LocalStore(tmp_path / "empty", CAP)
    assert OciStore.from_url(registry.url).pull("0" * 64, empty) is None
    assert OciStore.from_url(registry.url + "/never-pushed").pull("1" * 64, empty) is None
    assert _store_files(tmp_path / "empty") == []


def test_a_tampered_blob_is_refused_and_nothing_lands(registry, tmp_path):
    _, out, _, key = _saved(tmp_path, registry.url, "tamper")
    sha = hashlib.sha256((out / "images" / "boot.img").read_bytes()).hexdigest()
    data = registry.blob(sha)
    raw = bytearray(data.read_bytes())
    raw[1000] ^= 0x01                                  # same size, one bit
    data.write_bytes(bytes(raw))
    empty = LocalStore(tmp_path / "empty", CAP)
    got = hashlib.sha256(bytes(raw)).hexdigest()
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(registry.url).pull(key, empty)
    assert exc.value.message == (f"{registry.url} sent blob {sha[:16]} with sha256 {got[:16]} "
                                 f"({len(raw)} bytes): refused")
    assert _store_files(tmp_path / "empty") == []
    # through the cache: a note, a miss, and the step would run
    cache = ArtifactCache(LocalStore(tmp_path / "empty2", CAP), OciStore.from_url(registry.url))
    assert cache.restore("tfa", ArtifactCache.key("stamp-tamper"), tmp_path / "o") is None
    assert cache.notes == [f"remote: {exc.value.message}"]
    assert _store_files(tmp_path / "empty2") == [] and not (tmp_path / "o").exists()


def test_a_tampered_record_is_refused(registry, tmp_path):
    _, _, _, key = _saved(tmp_path, registry.url, "record")
    import requests
    manifest = requests.get(f"http://127.0.0.1:{registry.port}/v2/seedfw/steps/manifests/{key}",
                            headers={"Accept": oci.MANIFEST_MEDIA_TYPE}, timeout=10).json()
    config = registry.blob(manifest["config"]["digest"][7:])
    config.write_bytes(config.read_bytes().replace(b'"tfa"', b'"xyz"'))
    with pytest.raises(SeedfwError, match=r"sent blob [0-9a-f]{16} with sha256 .*: refused$"):
        OciStore.from_url(registry.url).pull(key, LocalStore(tmp_path / "empty", CAP))
    assert _store_files(tmp_path / "empty") == []


def _push_raw(registry, key: str, record: dict, layers=None) -> None:
    """A hand-made artifact under `key` (what a hostile or broken writer could push)."""
    import requests
    base = f"http://127.0.0.1:{registry.port}/v2/seedfw/steps"
    raw = json.dumps(record).encode()
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    loc = requests.post(f"{base}/blobs/uploads/", timeout=10).headers["Location"]
    sep = "&" if "?" in loc else "?"
    url = loc if loc.startswith("http") else f"http://127.0.0.1:{registry.port}{loc}"
    assert requests.put(f"{url}{sep}digest={digest}", data=raw, timeout=10).status_code == 201
    manifest = {"schemaVersion": 2, "mediaType": oci.MANIFEST_MEDIA_TYPE,
                "config": {"mediaType": oci.RECORD_MEDIA_TYPE, "digest": digest,
                           "size": len(raw)},
                "layers": layers if layers is not None else
                [{"mediaType": oci.OUTPUT_MEDIA_TYPE, "digest": f"sha256:{f['sha256']}",
                  "size": f["size"]} for f in record["files"]]}
    r = requests.put(f"{base}/manifests/{key}", data=json.dumps(manifest),
                     headers={"Content-Type": oci.MANIFEST_MEDIA_TYPE}, timeout=10)
    assert r.status_code == 201, r.text


GOOD = {"path": "x", "sha256": "a" * 64, "size": 1, "mode": 0o644}


@pytest.mark.parametrize("case,entry,extra", [
    ("escape", {**GOOD, "path": "../../etc/cron.d/x"}, {}),
    ("absolute", {**GOOD, "path": "/etc/passwd"}, {}),
    ("setuid", {**GOOD, "mode": 0o4755}, {}),
    ("size", {**GOOD, "size": "1"}, {}),
    ("no-files", None, {}),
    ("log-path", GOOD, {"log": {"sha256": "../../../../tmp/x", "size": 1}}),  # a blob's name
])
def test_a_hostile_record_is_refused_before_any_blob(registry, tmp_path, case, entry, extra):
    key = hashlib.sha256(case.encode()).hexdigest()
    _push_raw(registry, key, {"format": 1, "key": key, "step": "tfa",
                              "files": [entry] if entry else [], **extra}, layers=[])
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(registry.url).pull(key, LocalStore(tmp_path / "s", CAP))
    assert exc.value.message == (f"{registry.url} sent a record for {key[:16]} that is not a "
                                 "valid seedfw record")
    assert _store_files(tmp_path / "s") == []


def test_a_record_for_another_key_is_refused(registry, tmp_path):
    _, _, _, key = _saved(tmp_path, registry.url, "other")
    record = LocalStore(tmp_path / "store-other", CAP).get_record(key)
    forged = hashlib.sha256(b"forged").hexdigest()
    _push_raw(registry, forged, record)               # a valid record, under the wrong tag
    with pytest.raises(SeedfwError, match="not a valid seedfw record"):
        OciStore.from_url(registry.url).pull(forged, LocalStore(tmp_path / "s", CAP))


# -- failures: one line, no credential ----------------------------------------------------------

def test_an_unreachable_registry_is_one_line_then_quiet(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_USER", USER)
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_PASSWORD", PASSWORD)
    url = f"oci://127.0.0.1:{_free_port()}/seedfw/steps"
    store = OciStore.from_url(url)
    local = LocalStore(tmp_path / "s", CAP)
    started = time.monotonic()
    with pytest.raises(SeedfwError) as exc:
        store.pull("2" * 64, local)
    assert exc.value.message == f"{url} does not answer (connection refused)"
    assert str(exc.value) == exc.value.message and "\n" not in exc.value.message
    assert time.monotonic() - started < 3              # no retries with back-off
    assert store.pull("3" * 64, local) is None          # said once; the rest of the build is quiet
    assert store.ping() == "does not answer (connection refused)"
    # a build's view: one note, the step runs
    cache = ArtifactCache(local, OciStore.from_url(url), True)
    out, files = _outputs(tmp_path, "down")
    cache.save("tfa", ArtifactCache.key("stamp-down"), out, files)
    assert cache.restore("tfa", ArtifactCache.key("stamp-nope"), tmp_path / "o") is None
    assert cache.notes == [f"remote: {url} does not answer (connection refused)"]
    assert PASSWORD not in repr(cache.describe()) + "".join(cache.notes)


def test_credentials_come_from_the_environment_and_are_never_shown(auth_registry, tmp_path,
                                                                   monkeypatch):
    url = auth_registry.url
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(url).pull("4" * 64, LocalStore(tmp_path / "s", CAP))
    assert exc.value.message == (f"{url} needs credentials (SEEDFW_CACHE_REMOTE_USER and "
                                 "SEEDFW_CACHE_REMOTE_PASSWORD, or docker/oras login)")
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_USER", USER)
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_PASSWORD", "wrong-" + PASSWORD)
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(url).pull("4" * 64, LocalStore(tmp_path / "s", CAP))
    assert exc.value.message == f"{url} refused the credentials"
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_PASSWORD", PASSWORD)
    store = OciStore.from_url(url)
    assert store.ping() == "answers (http, credentials from the environment)"
    cache, out, files, key = _saved(tmp_path, url, "auth")
    record = OciStore.from_url(url).pull(key, LocalStore(tmp_path / "pulled", CAP))
    assert record is not None
    shown = repr(store) + store.ping() + cache.describe() + json.dumps(record)
    assert PASSWORD not in shown and USER + ":" not in shown
    for p in _store_files(tmp_path / "pulled") + _store_files(auth_registry.data):
        data = p.read_bytes()
        assert PASSWORD.encode() not in data and base64.b64encode(
            f"{USER}:{PASSWORD}".encode()) not in data, p
    monkeypatch.delenv("SEEDFW_CACHE_REMOTE_PASSWORD")
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(url).pull(key, LocalStore(tmp_path / "s", CAP))
    assert exc.value.message == (f"{url} cannot be used: SEEDFW_CACHE_REMOTE_USER is set but "
                                 "SEEDFW_CACHE_REMOTE_PASSWORD is not (set both or neither)")


def test_credentials_from_the_docker_config_file(auth_registry, tmp_path, monkeypatch):
    config = tmp_path / "docker"
    config.mkdir()
    auth = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    (config / "config.json").write_text(json.dumps(
        {"auths": {f"localhost:{auth_registry.port}": {"auth": auth}}}))
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    store = OciStore.from_url(auth_registry.url)
    assert store.ping() == "answers (http, credentials from config.json)"
    assert store.pull("5" * 64, LocalStore(tmp_path / "s", CAP)) is None
    (config / "config.json").write_text("{not json")
    line = OciStore.from_url(auth_registry.url).ping()
    assert line.startswith("cannot be used: ") and "not valid JSON" in line
    assert PASSWORD not in line


def test_a_url_with_credentials_is_refused_without_showing_them():
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(f"oci://{USER}:{PASSWORD}@127.0.0.1:5000/seedfw/steps")
    assert str(exc.value) == ("SEEDFW_CACHE_REMOTE: 'oci://****@127.0.0.1:5000/seedfw/steps': "
                              "credentials do not belong in the URL; set "
                              "SEEDFW_CACHE_REMOTE_USER and SEEDFW_CACHE_REMOTE_PASSWORD or log "
                              "in with docker/oras")


def test_the_build_refuses_a_url_with_credentials_in_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"), "SEEDFW_ARTIFACT_CACHE": str(tmp_path),
           "SEEDFW_CACHE_REMOTE": f"oci://{USER}:{PASSWORD}@127.0.0.1:5000/seedfw/steps"}
    proc = subprocess.run([sys.executable, "-m", "invoke", "build", "--board", "mps2-an385",
                           "--output", str(tmp_path / "out")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert [line for line in proc.stderr.splitlines() if line.startswith("error: ")] == [
        "error: SEEDFW_CACHE_REMOTE: 'oci://****@127.0.0.1:5000/seedfw/steps': credentials do "
        "not belong in the URL; set SEEDFW_CACHE_REMOTE_USER and SEEDFW_CACHE_REMOTE_PASSWORD "
        "or log in with docker/oras"]
    assert PASSWORD not in proc.stdout + proc.stderr


@pytest.mark.parametrize("url,line", [
    ("oci://127.0.0.1:5000", "is not oci://HOST[:PORT]/REPOSITORY"),
    ("oci://127.0.0.1:5000/Seedfw/Steps", "is not oci://HOST[:PORT]/REPOSITORY"),
    ("oci://127.0.0.1:99999/a", "is not oci://HOST[:PORT]/REPOSITORY"),
    ("oci:///a/b", "is not oci://HOST[:PORT]/REPOSITORY"),
    ("oci://h:5000/a?x=1", "is not oci://HOST[:PORT]/REPOSITORY"),
])
def test_a_bad_url_is_one_line(url, line):
    with pytest.raises(SeedfwError) as exc:
        OciStore.from_url(url)
    assert str(exc.value).startswith(f"SEEDFW_CACHE_REMOTE: '{url}' {line}")


def test_https_except_on_loopback_unless_insecure(monkeypatch):
    assert OciStore.from_url("oci://127.0.0.1:5000/a").insecure
    assert OciStore.from_url("oci://localhost/a/b").insecure
    assert not OciStore.from_url("oci://registry.example:5000/a").insecure
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_INSECURE", "1")
    assert OciStore.from_url("oci://registry.example:5000/a").insecure


# -- a hostile registry (answers a real one never sends) ----------------------------------------

class Hostile(http.server.BaseHTTPRequestHandler):
    mode = "endless-manifest"
    sent = 0

    def log_message(self, *args):
        pass

    def _endless(self, content_type: str, prefix: bytes = b"") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.end_headers()
        chunk = prefix + b" " * (1 << 20)
        try:
            for _ in range(200):                       # 200 MiB if nobody hangs up
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
                chunk = b" " * (1 << 20)
        except OSError:
            pass

    def do_GET(self):
        mode = type(self).mode
        if mode == "endless-manifest":
            return self._endless(oci.MANIFEST_MEDIA_TYPE, b'{"schemaVersion": 2, "x": "')
        if mode == "503":
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "slow":
            time.sleep(3)
            return
        if mode == "bearer":
            return self._bearer()
        # a record of one file (10 bytes, or 1 TiB), then an endless blob
        size = 1 << 40 if mode == "huge-record" else 10
        record = json.dumps({"format": 1, "key": "c" * 64, "step": "tfa", "files": [
            {"path": "x", "sha256": "b" * 64, "size": size, "mode": 0o644}]}).encode()
        record_sha = hashlib.sha256(record).hexdigest()
        if "/manifests/" in self.path:
            body = json.dumps({"schemaVersion": 2, "mediaType": oci.MANIFEST_MEDIA_TYPE,
                               "config": {"mediaType": oci.RECORD_MEDIA_TYPE,
                                          "digest": "sha256:" + record_sha, "size": len(record)},
                               "layers": [{"mediaType": oci.OUTPUT_MEDIA_TYPE,
                                           "digest": "sha256:" + "b" * 64, "size": size}]}).encode()
        elif record_sha in self.path:
            body = record
        else:
            return self._endless("application/octet-stream")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


    def _reply(self, code: int, body: bytes = b"", **headers) -> None:
        self.send_response(code)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _bearer(self):
        """A registry behind a token service (the way hosted registries are): /v2/… wants a
        Bearer token, /token hands one out for Basic credentials."""
        auth = self.headers.get("Authorization", "")
        type(self).seen.append((self.path.split("?")[0], auth.split(" ")[0]))
        if self.path.startswith("/token"):
            good = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
            if auth != good:
                return self._reply(401)
            return self._reply(200, json.dumps({"token": "tok-3c9a-secret"}).encode())
        if auth != "Bearer tok-3c9a-secret":
            realm = f"http://127.0.0.1:{self.server.server_address[1]}/token"
            return self._reply(401, Www_Authenticate=f'Bearer realm="{realm}",service="test",'
                                                     'scope="repository:seedfw/steps:pull"')
        return self._reply(200 if self.path == "/v2/" else 404, b"{}")

    def do_HEAD(self):                               # no blob here
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):                               # a read-only account: no upload session
        type(self).posts += 1
        self.send_response(403)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def hostile():
    key = "c" * 64
    Hostile.sent = Hostile.posts = 0
    Hostile.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    # shutdown() waits for serve_forever's next poll: 0.5 s by default, per test
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield f"oci://127.0.0.1:{server.server_address[1]}/seedfw/steps", key
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("mode,expected", [
    ("endless-manifest", "sent a manifest over 4 MiB: refused"),
    ("endless-blob", f"sent more than 10 bytes for blob {'b' * 16}: refused"),
    ("huge-record", f"sent a record for {'c' * 16} larger than the local store's cap"),
    ("503", "answered HTTP 503 to GET manifest"),
    ("slow", "did not answer within 1 s (GET manifest)"),
])
def test_a_hostile_registry_costs_a_bounded_read(hostile, tmp_path, monkeypatch, mode, expected):
    url, key = hostile
    Hostile.mode = mode
    monkeypatch.setattr(oci_client, "TIMEOUT", (1.0, 1.0))
    import tracemalloc
    tracemalloc.start()
    started = time.monotonic()
    try:
        with pytest.raises(SeedfwError) as exc:
            OciStore.from_url(url).pull(key, LocalStore(tmp_path / "s", CAP))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert exc.value.message == f"{url} {expected}"
    assert time.monotonic() - started < 10
    assert peak < 32 << 20, peak                     # bounded by the caps, not by the sender
    assert _store_files(tmp_path / "s") == []


def test_a_refused_push_is_one_note_and_pulls_go_on(hostile, tmp_path):
    url, key = hostile
    Hostile.mode = "503"
    cache = ArtifactCache(LocalStore(tmp_path / "s", CAP), OciStore.from_url(url), True)
    for tag in ("one", "two"):
        out, files = _outputs(tmp_path, tag)
        cache.save("tfa", ArtifactCache.key(f"stamp-{tag}"), out, files)
    assert cache.notes == [f"remote: {url} opened no upload session (read-only "
                                 "credentials?)"]
    assert Hostile.posts == 1                        # the second save did not try again
    with pytest.raises(SeedfwError, match="answered HTTP 503 to GET manifest"):
        cache.remote.pull(key, cache.local)          # reading is still asked


def test_a_registry_behind_a_token_service(hostile, tmp_path, monkeypatch):
    url, key = hostile
    Hostile.mode = "bearer"
    # in a process of its own: pytest's log capture would hide what the library logs to stderr
    code = ("from seedfw.cache.oci import OciStore\nfrom seedfw.cache import LocalStore\n"
            "try:\n"
            f"    OciStore.from_url({url!r}).pull({key!r},"
            f" LocalStore({str(tmp_path / 's')!r}, 1))\n"
            "except Exception as exc:\n"
            "    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "tools")}, timeout=60)
    assert (proc.stdout, proc.stderr) == (
        f"{url} needs credentials (SEEDFW_CACHE_REMOTE_USER and SEEDFW_CACHE_REMOTE_PASSWORD, "
        "or docker/oras login)\n", "")             # one line; the library's own log is quiet
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_USER", USER)
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_PASSWORD", PASSWORD)
    Hostile.seen.clear()
    store = OciStore.from_url(url)
    assert store.pull(key, LocalStore(tmp_path / "s", CAP)) is None      # a miss, authorized
    manifest = f"/v2/seedfw/steps/manifests/{key}"
    assert Hostile.seen == [(manifest, ""), ("/token", "Basic"), (manifest, "Bearer")]
    assert store.pull(key, LocalStore(tmp_path / "s", CAP)) is None      # the token is kept
    assert Hostile.seen[3:] == [(manifest, "Bearer")]
    assert store.ping() == "answers (http, credentials from the environment)"
    assert "tok-3c9a" not in repr(store) + store.ping()


# -- doctor -------------------------------------------------------------------------------------

def test_doctor_shows_the_store_and_whether_the_remote_answers(registry, tmp_path, monkeypatch):
    from seedfw.host import doctor
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE", str(tmp_path / "store"))
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE_SIZE", "2G")
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE", registry.url)
    _saved(tmp_path, registry.url, "doctor")
    (tmp_path / "store-doctor").rename(tmp_path / "store")
    lines = doctor.artifact_store_lines()
    assert lines[0].startswith(f"ok: artifact store {tmp_path / 'store'}: 1 record(s), 4 blob(s), ")
    assert lines[0].endswith(": 1 record(s), 4 blob(s), 0.3 MiB of 2048 MiB")
    assert lines[1] == (f"ok: artifact store remote {registry.url} (read-only): answers "
                        "(http, anonymous)")
    down = f"oci://127.0.0.1:{_free_port()}/a"
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE", down)
    monkeypatch.setenv("SEEDFW_CACHE_REMOTE_MODE", "rw")
    assert doctor.artifact_store_lines()[1] == (
        f"warning: artifact store remote {down} (read-write): does not answer (connection "
        "refused); builds use the local store only")
    monkeypatch.setenv("SEEDFW_ARTIFACT_CACHE", "off")
    assert doctor.artifact_store_lines() == ["ok: artifact store: off (SEEDFW_ARTIFACT_CACHE=off)"]


# -- end to end ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_build_restores_every_cacheable_step_from_the_registry(registry, tmp_path):
    """CI builds and pushes (rw); a developer with an empty local store builds the same tree
    into a new output directory (ro): every step the first build stored is restored from the
    registry, and the images are the same bytes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"),
           "SEEDFW_CACHE_REMOTE": registry.url + "/e2e"}
    first, second = tmp_path / "out1", tmp_path / "out2"
    runs = []
    for out, store, mode in ((first, "A", "rw"), (second, "B", "ro")):
        env.update(SEEDFW_ARTIFACT_CACHE=str(tmp_path / store), SEEDFW_CACHE_REMOTE_MODE=mode)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "invoke", "build", "--board", "mps2-an385",
                               "--output", str(out)], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=900)
        runs.append(time.monotonic() - started)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "artifact store:" not in proc.stdout, proc.stdout     # no note: remote answered
    ran = [json.loads(line) for line in (first / "logs/steps.jsonl").read_text().splitlines()]
    again = {r["step"]: r for r in
             (json.loads(line) for line in (second / "logs/steps.jsonl").read_text().splitlines())}
    stored = [r["step"] for r in ran if r["action"] == "ran" and "stored" in r]
    assert stored, ran
    for step in stored:
        assert again[step]["action"] == "restored" and again[step]["source"] == "oci", again[step]
    assert _store_files(tmp_path / "B")                  # the pull landed in the local store
    # every image; not ccache.json: the compile figures of a build that compiled (ccache.finish)
    images = sorted(p.relative_to(first) for p in (first / "images").rglob("*")
                    if p.is_file() and p.name != "ccache.json")
    assert Path("images/mps2-an385-boot.pkg") in images
    for rel in images:
        assert (second / rel).read_bytes() == (first / rel).read_bytes(), rel
    print(f"cold+push {runs[0]:.1f} s, restore from registry {runs[1]:.1f} s, "
          f"{len(stored)} step(s) restored")
