"""The artifact store's remote on an OCI registry, through the ORAS Python client.

Why a registry: every CI system already runs or rents one (GitLab, GitHub, Harbor, Zot, the
distribution registry in Debian's `docker-registry` package), it is content-addressed by sha256 —
the same key the local store uses — and Armbian keeps its build artifacts in one with ORAS the
same way. One step's outputs are one OCI artifact; its tag is the step's cache key.

Why the ORAS client and how much of it: `oras.provider.Registry` knows the distribution API's
URLs (`oras.container.Container`), the upload dance (POST, PUT or chunked PATCH) and the token
handshake (`oras.auth`). Its high-level `push`/`pull` are file-tree tools (paths checked against
the cwd, tags from the URI, no size bounds), so OciStore uses the methods below them:
`put_upload`, `chunked_upload`, `upload_manifest`, `get_blob`, `do_request` (a HEAD, a bounded
manifest GET). `do_request` itself is replaced (seedfw.cache.oci_client: the library's retries
every failure with sleeps growing to 83 s and sets no timeout), so one request is one answer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import SeedfwError
from .. import reading
from .local import RECORD_CAP, LocalStore, _valid
from . import oci_client
from .oci_client import client_class, credentials

MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
RECORD_MEDIA_TYPE = "application/vnd.seedfw.step-record.v1+json"
OUTPUT_MEDIA_TYPE = "application/vnd.seedfw.step-output.v1"
LOG_MEDIA_TYPE = "application/vnd.seedfw.step-log.v1"
TITLE = "org.opencontainers.image.title"
MANIFEST_CAP = 4 << 20          # the distribution registry's own limit on a manifest
CHUNK = 16 << 20                # over this a blob goes up in PATCH chunks (bounded memory)
SETTING = "SEEDFW_CACHE_REMOTE"
_KEY = re.compile(r"[0-9a-f]{64}")
_NAME = r"[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*"       # the distribution spec's path component
_REPO = re.compile(rf"{_NAME}(?:/{_NAME})*")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _redact(url: str) -> str:
    """The URL without any userinfo (the user name too: a registry URL should carry none), then
    seedfw.secrets.redact for what else the environment holds (the registry password)."""
    from .. import secrets
    return secrets.redact(re.sub(r"(://)[^/@]*@", r"\1****@", url))


class OciStore:
    """`SEEDFW_CACHE_REMOTE=oci://HOST[:PORT]/REPOSITORY` — step outputs on an OCI registry.

    Settings (environment):
        SEEDFW_CACHE_REMOTE            oci://HOST[:PORT]/REPO/PATH, e.g.
                                       oci://127.0.0.1:5000/seedfw/steps. Plain HTTP for
                                       127.0.0.1, localhost and ::1; HTTPS (system CAs, or
                                       REQUESTS_CA_BUNDLE) for any other host.
        SEEDFW_CACHE_REMOTE_INSECURE   1: plain HTTP for any host (a registry on a private net)
        SEEDFW_CACHE_REMOTE_MODE       ro (default): read only; rw: CI also pushes
        SEEDFW_CACHE_REMOTE_USER       with SEEDFW_CACHE_REMOTE_PASSWORD: the credentials
        SEEDFW_CACHE_REMOTE_PASSWORD

    Layout in the registry, one artifact per step result (`oras manifest fetch` shows it):
        tag         the cache key (64 hex digits: sha256 of the step's stamp, a valid tag)
        config      media type application/vnd.seedfw.step-record.v1+json: the record — the
                    same JSON as the local store's ac/<key>.json (step, and each file's
                    relative path, sha256, size, mode)
        layers      one per file, media type application/vnd.seedfw.step-output.v1, digest
                    sha256 of its bytes, annotation org.opencontainers.image.title = its
                    relative path (`oras pull` unpacks an artifact into a readable tree);
                    and the step's log from the build that made them, media type
                    application/vnd.seedfw.step-log.v1, title <step>.log
        annotations seedfw.step = the step's name
    Blobs are shared by digest across artifacts: a file that two steps or two boards produce is
    uploaded once (a HEAD before each upload skips what the registry has).

    Credentials, from the environment only — never from the URL (a URL with user:password@ is
    refused), never printed, never in a record, report or manifest: SEEDFW_CACHE_REMOTE_USER and
    SEEDFW_CACHE_REMOTE_PASSWORD, or else the `auths` entry for HOST[:PORT] in docker's
    credentials file ($DOCKER_CONFIG/config.json, default ~/.docker/config.json), which is
    also where `oras login` writes. Credential helpers (credsStore) are not run. Without
    credentials the registry is used anonymously. A registry asking for `Basic` (htpasswd) gets
    the credentials; one asking for `Bearer` gets them via its token service (oras.auth).

    Outside input: whatever the registry answers is checked like a file from a stranger. The
    manifest is read up to 4 MiB and the record up to 1 MiB, the record must name this key and
    pass the local store's own check (typed fields, relative paths without `..`), each blob is
    hashed while it is downloaded and refused at the first byte past its declared size, and a
    pull larger than the local store's cap is refused. Blobs are downloaded to temporary files
    and renamed into the local store only when all are verified, then the record is written:
    a refused pull leaves nothing in the local store.

    Failure behaviour: a missing tag is a miss (None). A registry that does not answer, answers
    5xx, refuses the credentials or sends something that fails the checks raises SeedfwError
    with one line naming the redacted URL; the artifact cache turns it into a build note and
    the step runs — a build never fails because the remote is down. After the first failure to
    reach the registry, the store stays quiet for the rest of the process (no second timeout per
    step, no note per step); a refused push (read-only credentials) stops pushes only.
    """

    name = "oci"

    def __init__(self, url: str, host: str, repository: str, insecure: bool):
        self.url = url
        self.host = host                # host[:port], as in a docker config's auths
        self.repository = repository
        self.insecure = insecure
        self._local = threading.local()  # one HTTP session per build thread
        self._down: str | None = None
        self._no_push = False

    @classmethod
    def from_url(cls, url: str) -> "OciStore":
        shown = _redact(url)
        parts = urlsplit(url)
        if parts.scheme != "oci":
            raise SeedfwError(f"'{shown}' is not an oci:// URL", None, SETTING)
        if "@" in parts.netloc:
            raise SeedfwError(f"'{shown}': credentials do not belong in the URL; set "
                              "SEEDFW_CACHE_REMOTE_USER and SEEDFW_CACHE_REMOTE_PASSWORD "
                              "or log in with docker/oras", None, SETTING)
        try:
            parts.port                  # a port out of range (or not a number) raises here
            hostname = parts.hostname
        except ValueError:
            hostname = None
        repository = parts.path.strip("/")
        if not hostname or parts.query or parts.fragment or not _REPO.fullmatch(repository):
            raise SeedfwError(f"'{shown}' is not oci://HOST[:PORT]/REPOSITORY (repository: "
                              "lower-case names separated by /)", None, SETTING)
        insecure = (hostname in _LOOPBACK
                    or os.environ.get("SEEDFW_CACHE_REMOTE_INSECURE", "") == "1")
        return cls(f"oci://{parts.netloc}/{repository}", parts.netloc, repository, insecure)

    def __repr__(self) -> str:
        return _redact(self.url)

    # -- HTTP --
    def _client(self):
        client = getattr(self._local, "client", None)
        if client is None:
            try:
                client = client_class()(self.host, self.insecure, credentials(self.host))
            except SeedfwError as exc:
                raise self._fail(f"cannot be used: {exc.line()}") from None
            self._local.client = client
        return client

    def _container(self, tag: str = "latest"):
        import oras.container
        return oras.container.Container(f"{self.repository}:{tag}", registry=self.host)

    def _fail(self, why: str, down: bool = True) -> SeedfwError:
        if down:
            self._down = why
        return SeedfwError(f"{self!r} {why}")

    def _call(self, what: str, fn, *args, **kwargs):
        """fn(*args) through the client; a failure to reach the registry becomes one line."""
        import requests
        try:
            return fn(*args, **kwargs)
        except SeedfwError:
            raise
        except requests.exceptions.SSLError:
            raise self._fail(f"did not pass TLS verification ({what}); for plain HTTP set "
                             "SEEDFW_CACHE_REMOTE_INSECURE=1") from None
        except requests.exceptions.ConnectTimeout:
            raise self._fail(f"does not answer (no connection within {oci_client.TIMEOUT[0]:.0f} s)") from None
        except requests.exceptions.Timeout:
            raise self._fail(f"did not answer within {oci_client.TIMEOUT[1]:.0f} s ({what})") from None
        except requests.exceptions.ConnectionError as exc:
            text = str(exc).lower()
            why = ("connection refused" if "refused" in text else
                   "host not found" if "resolve" in text or "not known" in text else
                   "connection failed")
            raise self._fail(f"does not answer ({why})") from None
        except ValueError as exc:       # the library's word for an answer it could not use
            raise self._fail(f"failed ({what}: {type(exc).__name__})", down=False) from None
        except requests.exceptions.RequestException as exc:
            raise self._fail(f"failed ({what}: {type(exc).__name__})") from None

    def _check(self, response, what: str, ok=(200, 201, 202)) -> None:
        code = response.status_code
        if code in ok:
            return
        response.close()
        pushing = what.startswith("push")
        if code == 401:
            self._no_push = self._no_push or pushing
            creds = self._client().basic is not None
            raise self._fail("refused the credentials" if creds else
                             "needs credentials (SEEDFW_CACHE_REMOTE_USER and "
                             "SEEDFW_CACHE_REMOTE_PASSWORD, or docker/oras login)",
                             down=not pushing)
        if code == 403 and pushing:
            self._no_push = True
            raise self._fail("denied the push (read-only credentials?)", down=False)
        if code == 403:
            raise self._fail(f"denied access to {self.repository}")
        raise self._fail(f"answered HTTP {code} to {what}", down=code >= 500)

    # -- read --
    def ping(self) -> str:
        """One line for `invoke doctor`: whether the registry answers, never raising."""
        try:
            client = self._client()
            r = self._call("GET /v2/", client.do_request,
                           f"{client.prefix}://{self.host}/v2/", "GET")
            self._check(r, "GET /v2/", ok=(200,))
            who = "anonymous" if client.basic is None else f"credentials from {client.source}"
            return f"answers ({'http' if self.insecure else 'https'}, {who})"
        except SeedfwError as exc:
            return exc.message.removeprefix(f"{self!r} ")
        except Exception as exc:        # doctor must print a line whatever happened
            return f"could not be asked ({type(exc).__name__})"

    def pull(self, key: str, local: LocalStore) -> dict | None:
        """The record for `key` with every blob verified into `local`; None on a miss."""
        if not _KEY.fullmatch(key) or self._down:
            return None
        try:
            return self._pull(key, local)
        except OSError as exc:          # the local side (a full disk): a miss, not a crash
            raise SeedfwError(f"{self!r}: not stored locally ({exc.strerror or exc})") from None

    def _pull(self, key: str, local: LocalStore) -> dict | None:
        client = self._client()
        container = self._container(key)
        r = self._call("GET manifest", client.do_request,
                       f"{client.prefix}://{container.manifest_url()}", "GET",
                       headers={"Accept": MANIFEST_MEDIA_TYPE}, stream=True)
        if r.status_code == 404:
            r.close()
            return None
        self._check(r, "GET manifest", ok=(200,))
        manifest = self._json(self._call("GET manifest", self._read, r, MANIFEST_CAP,
                                         "manifest"), "manifest", MANIFEST_CAP)
        config, layers = self._layers(manifest, key)
        record = self._json(self._fetch(container, config["digest"][7:], config["size"], None),
                            "record", RECORD_CAP)
        if not _ours(record, key):
            raise self._fail(f"sent a record for {key[:16]} that is not a valid seedfw record",
                             down=False)
        blobs = _blobs(record)
        if not set(blobs.items()) <= layers:
            raise self._fail(f"sent a record for {key[:16]} naming blobs its manifest does "
                             "not hold", down=False)
        missing = {sha: size for sha, size in blobs.items() if not local.has_blob(sha, size)}
        if sum(missing.values()) > local.cap:
            raise self._fail(f"sent a record for {key[:16]} larger than the local store's cap",
                             down=False)
        fetched: list[tuple[Path, Path]] = []
        try:
            for sha, size in sorted(missing.items()):
                final = local.blob_path(sha)
                final.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=final.parent)
                os.close(fd)
                fetched.append((Path(tmp), final))
                self._fetch(container, sha, size, Path(tmp))
                os.chmod(tmp, 0o444)
            for tmp, final in fetched:       # all verified: only now do they enter the store
                os.replace(tmp, final)
            fetched = []
            local.put_record(key, record)
        finally:
            for tmp, _ in fetched:
                tmp.unlink(missing_ok=True)
        return record

    def _layers(self, manifest, key: str) -> tuple[dict, set]:
        """(config descriptor, {(sha256, size)} of the layers) of a manifest of ours."""
        def descriptor(d, media_type):
            return (isinstance(d, dict) and d.get("mediaType") == media_type
                    and isinstance(d.get("digest"), str) and d["digest"].startswith("sha256:")
                    and _KEY.fullmatch(d["digest"][7:]) is not None
                    and isinstance(d.get("size"), int) and d["size"] >= 0)
        config = manifest.get("config") if isinstance(manifest, dict) else None
        layers = manifest.get("layers") if isinstance(manifest, dict) else None
        if not (descriptor(config, RECORD_MEDIA_TYPE) and config["size"] <= RECORD_CAP
                and isinstance(layers, list)
                and all(descriptor(d, OUTPUT_MEDIA_TYPE) or descriptor(d, LOG_MEDIA_TYPE)
                        for d in layers)):
            raise self._fail(f"holds {key[:16]} but not as a seedfw step output", down=False)
        return config, {(d["digest"][7:], d["size"]) for d in layers}

    def _json(self, raw: bytes, what: str, cap: int):
        try:
            return reading.loads_json(raw, None, what, max_bytes=cap)
        except SeedfwError as exc:
            raise self._fail(f"sent a {what} that is {exc.message}", down=False) from None

    def _read(self, response, limit: int, what: str) -> bytes:
        data = bytearray()
        with response:
            for chunk in response.iter_content(1 << 16):
                data += chunk
                if len(data) > limit:
                    raise self._fail(f"sent a {what} over {limit >> 20} MiB: refused", down=False)
        return bytes(data)

    def _fetch(self, container, sha: str, size: int, dest: Path | None) -> bytes:
        """Blob `sha` of `size` bytes, hashed on the way: into `dest`, or returned (dest None)."""
        client = self._client()
        r = self._call("GET blob", client.get_blob, container, f"sha256:{sha}", stream=True)
        self._check(r, f"GET blob {sha[:16]}", ok=(200,))
        h = hashlib.sha256()
        kept = bytearray()

        def stream(out) -> int:
            n = 0
            with r:
                for chunk in r.iter_content(1 << 20):
                    n += len(chunk)
                    if n > size:
                        raise self._fail(f"sent more than {size} bytes for blob {sha[:16]}: "
                                         "refused", down=False)
                    h.update(chunk)
                    (out.write if out is not None else kept.extend)(chunk)
            return n

        if dest is None:
            n = self._call("GET blob", stream, None)
        else:
            with open(dest, "wb") as out:
                n = self._call("GET blob", stream, out)
        if n != size or h.hexdigest() != sha:
            raise self._fail(f"sent blob {sha[:16]} with sha256 {h.hexdigest()[:16]} "
                             f"({n} bytes): refused", down=False)
        return bytes(kept)

    # -- write --
    def push(self, record: dict, local: LocalStore) -> None:
        """Upload the record's blobs (those the registry lacks) and the record, tagged by key."""
        key = record.get("key", "")
        if self._down or self._no_push or not _ours(record, key):
            return
        try:
            self._push(record, key, local)
        except OSError as exc:          # a blob trimmed meanwhile: this entry is not pushed
            raise SeedfwError(f"{self!r}: not pushed ({exc.strerror or exc})") from None

    def _push(self, record: dict, key: str, local: LocalStore) -> None:
        client = self._client()
        container = self._container(key)
        for sha, size in _blobs(record).items():
            self._upload(client, container, local.blob_path(sha), sha, size)
        raw = json.dumps(record, sort_keys=True).encode()
        config = {"mediaType": RECORD_MEDIA_TYPE, "size": len(raw),
                  "digest": "sha256:" + hashlib.sha256(raw).hexdigest()}
        with tempfile.NamedTemporaryFile(prefix=".record.", dir=local.root) as tmp:
            tmp.write(raw)
            tmp.flush()
            self._upload(client, container, Path(tmp.name), config["digest"][7:], len(raw))
        manifest = {
            "schemaVersion": 2, "mediaType": MANIFEST_MEDIA_TYPE, "config": config,
            "layers": [{"mediaType": OUTPUT_MEDIA_TYPE, "digest": f"sha256:{f['sha256']}",
                        "size": f["size"], "annotations": {TITLE: f["path"]}}
                       for f in record["files"]],
            "annotations": {"seedfw.step": str(record.get("step", ""))},
        }
        if record.get("log") is not None:   # the log of the build that made the files
            manifest["layers"].append({"mediaType": LOG_MEDIA_TYPE,
                                       "digest": f"sha256:{record['log']['sha256']}",
                                       "size": record["log"]["size"],
                                       "annotations": {TITLE: f"{record['step']}.log"}})
        r = self._call("push manifest", client.upload_manifest, manifest, container)
        self._check(r, "push manifest", ok=(200, 201))

    def _upload(self, client, container, path: Path, sha: str, size: int) -> None:
        layer = {"digest": f"sha256:{sha}", "size": size, "mediaType": OUTPUT_MEDIA_TYPE}
        # HEAD first (the library's blob_exists would take a 401 for "absent")
        r = self._call("HEAD blob", client.do_request,
                       f"{client.prefix}://{container.get_blob_url(layer['digest'])}", "HEAD")
        r.close()
        if r.status_code == 200:
            return
        if r.status_code != 404:
            self._check(r, f"HEAD blob {sha[:16]}", ok=())
        upload = (functools.partial(client.chunked_upload, chunk_size=CHUNK) if size > CHUNK
                  else client.put_upload)
        try:
            r = self._call("push blob", upload, str(path), container, layer)
        except SeedfwError:
            if self._down:
                raise
            # the library raises ValueError when no upload session was opened (401/403)
            self._no_push = True
            raise self._fail("opened no upload session (read-only credentials?)",
                             down=False) from None
        self._check(r, f"push blob {sha[:16]}", ok=(201,))


def _ours(record, key: str) -> bool:
    """The local store's own check, and a log blob named like every other blob (its name
    becomes a path in the local store)."""
    log = record.get("log") if isinstance(record, dict) else None
    return (_KEY.fullmatch(key) is not None and _valid(record, key)
            and isinstance(record.get("step"), str)
            and (log is None or _KEY.fullmatch(log["sha256"]) is not None))


def _blobs(record: dict) -> dict[str, int]:
    """{sha256: size} of every blob a record names: its files, and its log."""
    blobs = {f["sha256"]: f["size"] for f in record["files"]}
    if record.get("log") is not None:
        blobs[record["log"]["sha256"]] = record["log"]["size"]
    return blobs


__all__ = ["OciStore"]
