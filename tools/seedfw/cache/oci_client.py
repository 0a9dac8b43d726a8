"""The ORAS client as the OCI artifact store uses it: credentials, timeouts, one answer per request.

`client_class()` is `oras.provider.Registry` with one method replaced, `do_request`: the
library's retries every failure five times with sleeps growing to 83 s and sets no timeout, so a
registry that is down would cost minutes per step. Here every request (the token service's too)
has a timeout (TIMEOUT) and is not retried, and a `Basic` challenge (a registry behind htpasswd,
which the library's token backend would take for a token realm) is answered with the
credentials; a `Bearer` challenge goes to the library's token handshake (`oras.auth`).

`credentials(host)` reads them from the environment or docker's credentials file (see
seedfw.cache.oci.OciStore); they live only in the client object, in an Authorization header.
"""

from __future__ import annotations

import base64
import functools
import os
from pathlib import Path

from ..errors import SeedfwError
from .. import reading

TIMEOUT = (5.0, 60.0)           # (connect, read) seconds per request
SETTING = "SEEDFW_CACHE_REMOTE"


def credentials(host: str) -> tuple[str, str] | None:
    """(base64 "user:password", where it came from) or None: the environment first, then the
    docker/oras credentials file. Never logged; an unreadable file is one redacted line."""
    user = os.environ.get("SEEDFW_CACHE_REMOTE_USER", "")
    password = os.environ.get("SEEDFW_CACHE_REMOTE_PASSWORD", "")
    if user or password:
        if not (user and password):
            have, lack = (("SEEDFW_CACHE_REMOTE_USER", "SEEDFW_CACHE_REMOTE_PASSWORD") if user
                          else ("SEEDFW_CACHE_REMOTE_PASSWORD", "SEEDFW_CACHE_REMOTE_USER"))
            raise SeedfwError(f"{have} is set but {lack} is not (set both or neither)")
        return base64.b64encode(f"{user}:{password}".encode()).decode(), "the environment"
    config = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"
    if not config.is_file():
        return None
    doc = reading.loads_json(reading.read_bytes(config, "json"), config, "auths",
                             max_bytes=1 << 20)
    auths = doc.get("auths") if isinstance(doc, dict) else None
    if not isinstance(auths, dict):
        return None
    names = [host, f"https://{host}", f"http://{host}"]
    names += [n.replace("localhost", "127.0.0.1") for n in names if "localhost" in n]
    names += [n.replace("127.0.0.1", "localhost") for n in names if "127.0.0.1" in n]
    for name in names:
        entry = auths.get(name)
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("auth"), str) and entry["auth"]:
            return entry["auth"], config.name
        if isinstance(entry.get("username"), str) and isinstance(entry.get("password"), str):
            pair = f"{entry['username']}:{entry['password']}"
            return base64.b64encode(pair.encode()).decode(), config.name
    return None


@functools.lru_cache(maxsize=1)
def client_class():
    """oras.provider.Registry with seedfw's do_request (see the module docstring)."""
    try:
        import oras.provider
        import requests
    except ImportError:
        raise SeedfwError("the oci artifact store needs the Python package oras: "
                          "pip install -e '.[cache]' (or invoke setup)", None, SETTING) from None
    import logging
    # A failure is said once, in our line; the library's own log ("This endpoint requires a
    # token") would reach stderr through logging's last-resort handler as a second one.
    quiet = logging.getLogger("oras")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False

    class Session(requests.Session):
        def request(self, *args, **kwargs):
            kwargs.setdefault("timeout", TIMEOUT)     # looked up per call: tests shorten it
            return super().request(*args, **kwargs)

    class Client(oras.provider.Registry):
        def __init__(self, host: str, insecure: bool, creds):
            super().__init__(hostname=host, insecure=insecure, auth_backend="token")
            from http.cookiejar import DefaultCookiePolicy
            self.session = Session()
            self.session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
            self.auth.session = self.session
            self.basic, self.source = creds if creds else (None, None)
            if self.basic is not None:
                self.auth._basic_auth = self.basic      # for a Bearer token service
            self._basic_scheme = False

        def do_request(self, url, method="GET", data=None, headers=None, json=None,
                       stream=False):
            headers = dict(headers or {})
            if self._basic_scheme:
                headers["Authorization"] = f"Basic {self.basic}"
            elif self.auth.token:
                headers.update(self.auth.get_auth_header())
            send = functools.partial(self.session.request, method, url, data=data, json=json,
                                     stream=stream, verify=self._tls_verify)
            r = send(headers=headers)
            if r.status_code != 401:
                return r
            challenge = r.headers.get("Www-Authenticate", "")
            if challenge.lower().startswith("basic"):
                if self.basic is None or self._basic_scheme:
                    return r                        # the caller says why
                self._basic_scheme = True
                headers["Authorization"] = f"Basic {self.basic}"
            else:       # Bearer: a token for this scope (a new one when the scope grew)
                r.close()
                headers, changed = self.auth.authenticate_request(
                    r, headers, refresh=self.auth.token is not None)
                if not changed:
                    return r
            r.close()
            return send(headers=headers)

    return Client


__all__ = ["TIMEOUT", "client_class", "credentials"]
