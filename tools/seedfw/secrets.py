"""Secrets never leave the environment: the one redaction every printed or written value uses.

A team cache is reached with a credential in its URL (`redis://user:password@host`, ccache's
own syntax; `SEEDFW_CACHE_REMOTE` for seedfw's artifact cache). Such a URL lives in the
environment only, and whatever seedfw prints or writes from it — images/ccache.json, the build
log, the report, `invoke doctor` — goes through `redact()` first, so the password never reaches
a file another person is handed (an output directory, a CI artifact, a bug report).

`redact(value)` works on any text, not only on one URL: a list of ccache remote entries, a
warning line, a command line. Three shapes are rewritten, by pattern and independently of the
scheme (a scheme we do not know is no reason to leak):
  userinfo   scheme://user:secret@host -> scheme://user:****@host, scheme://token@host ->
             scheme://****@host (ccache's `redis://PASSWORD@HOST` is the second form);
  query      ?password=, &token=, api_key=, access_token=, secret=, signature=, … -> name=****;
  attribute  ccache's `|bearer-token=…` and `|header=Authorization=…` -> the value as ****.
On top of the patterns, the credentials found in the environment variables that may hold one
(SECRET_VARIABLES), and the values of SECRET_VALUE_VARIABLES (a password given on its own),
are replaced wherever they appear literally or percent-decoded, so a tool that echoes the
password in its own words (not as a URL) is caught as well.

`home_relative(path)` shows a path without the user's home directory: `~/…` under $HOME (or the
account's home in the password database, when $HOME was changed, e.g. by sudo), `<seedfw
cache>/…` under the seedfw cache root when that lies elsewhere, otherwise unchanged. `scrub()`
applies both to free text (log lines), replacing home prefixes only: a log's commands stay
readable and copy-pasteable.

Redacted text is stable: redact(redact(x)) == redact(x), and `****` never matches again.
"""

from __future__ import annotations

import functools
import os
import re
from urllib.parse import unquote

MASK = "****"
# Variables that may carry a credential: the values seedfw reads a remote URL from.
SECRET_VARIABLES = ("CCACHE_REMOTE_STORAGE", "SEEDFW_CACHE_REMOTE")
# Variables whose whole value is a credential (the artifact cache's registry password).
SECRET_VALUE_VARIABLES = ("SEEDFW_CACHE_REMOTE_PASSWORD",)
CACHE_ROOT_LABEL = "<seedfw cache>"

# scheme://USERINFO@ — the authority ends at the first "/", "?", "#", whitespace, quote or "|"
# (ccache's attribute separator); the userinfo is everything before its *last* "@", as
# urllib.parse and ccache read it, so an unencoded "@" in a password is masked too.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)"
                       r"(?P<userinfo>[^/?#\s|\"'<>]*)@")
_SECRET_NAMES = (r"[A-Za-z0-9_.-]*(?:pass(?:word|wd)?|pwd|token|secret|key|auth|signature|sig"
                 r"|credential)[A-Za-z0-9_.-]*")
_QUERY = re.compile(rf"(?P<name>[?&;]{_SECRET_NAMES}=)(?P<value>[^&;#\s|\"'<>]*)",
                    re.IGNORECASE)
_ATTRIBUTE = re.compile(r"(?P<name>\|(?:bearer-token|password|token)=|\|header=[^=|\s]+=)"
                        r"(?P<value>[^|\s\"'<>]*)", re.IGNORECASE)
# The same patterns on bytes: scrub_bytes decides without decoding a line.
_BYTE_PATTERNS = tuple(re.compile(p.pattern.encode(), p.flags & re.IGNORECASE)
                       for p in (_USERINFO, _QUERY, _ATTRIBUTE))
_MIN_SECRET = 4         # shorter literal values would mask ordinary words in a log


def _mask_userinfo(m: re.Match) -> str:
    userinfo = m.group("userinfo")
    user, colon, _secret = userinfo.partition(":")
    if colon:
        return f"{m.group('scheme')}{user}:{MASK}@"
    return f"{m.group('scheme')}{MASK}@"


@functools.lru_cache(maxsize=16)
def _secrets_in(values: tuple[str, ...], whole: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The credentials (passwords, tokens) inside these variable values, and the `whole`
    values themselves, longest first."""
    found: set[str] = {w.strip() for w in whole if w.strip()}
    for value in values:
        for m in _USERINFO.finditer(value):
            user, colon, secret = m.group("userinfo").partition(":")
            found.add(secret if colon else user)
        for pattern in (_QUERY, _ATTRIBUTE):
            found.update(m.group("value") for m in pattern.finditer(value))
    found |= {unquote(s) for s in found}
    return tuple(sorted((s for s in found if len(s) >= _MIN_SECRET and s != MASK),
                        key=len, reverse=True))


def known_secrets() -> tuple[str, ...]:
    """Credentials held by the environment (SECRET_VARIABLES, SECRET_VALUE_VARIABLES), to be
    masked wherever they occur."""
    return _secrets_in(tuple(os.environ.get(name, "") for name in SECRET_VARIABLES),
                       tuple(os.environ.get(name, "") for name in SECRET_VALUE_VARIABLES))


def has_credential(value: str) -> bool:
    """Whether `value` holds a credential by the patterns alone (userinfo, secret-named query
    parameter or attribute), whatever the environment holds."""
    text = "" if value is None else str(value)
    return any(p.search(text) for p in (_USERINFO, _QUERY, _ATTRIBUTE))


def redact(value: str) -> str:
    """`value` with every credential in it replaced by ****: URL userinfo, secret-named query
    parameters and ccache attributes, and any credential the environment holds (see the module
    docstring). Text without one is returned unchanged; None and non-strings become str()."""
    text = "" if value is None else str(value)
    if "@" in text:
        text = _USERINFO.sub(_mask_userinfo, text)
    if "=" in text:
        text = _QUERY.sub(lambda m: m.group("name") + MASK, text)
        text = _ATTRIBUTE.sub(lambda m: m.group("name") + MASK, text)
    for secret in known_secrets():
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _homes() -> tuple[str, ...]:
    """Home directories to hide, longest first: $HOME and the account's own (they differ
    under sudo or a test's HOME), each also as its resolved path; never "/"."""
    return _homes_for(os.environ.get("HOME", ""), os.getuid())


@functools.lru_cache(maxsize=8)
def _homes_for(home_variable: str, uid: int) -> tuple[str, ...]:
    # Cached: a build log asks for every line it writes (realpath and the password database
    # are system calls).
    homes = set()
    candidates = [home_variable]
    try:
        import pwd
        candidates.append(pwd.getpwuid(uid).pw_dir)
    except (ImportError, KeyError):
        pass
    for home in candidates:
        if not home or not os.path.isabs(home):
            continue
        for form in (os.path.normpath(home), os.path.realpath(home)):
            if form != os.sep:
                homes.add(form)
    return tuple(sorted(homes, key=len, reverse=True))


@functools.lru_cache(maxsize=8)
def _encoded(homes: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(h.encode("utf-8", "surrogateescape") for h in homes)


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` ("" for root itself), or None when it is not under it."""
    if path == root:
        return ""
    if path.startswith(root.rstrip(os.sep) + os.sep):
        return path[len(root.rstrip(os.sep)) + 1:]
    return None


def home_relative(path) -> str:
    """`path` as it may be shown in an artifact: `~/…` under the user's home, `<seedfw
    cache>/…` under the seedfw cache root when that is outside the home, else unchanged (a
    relative path stays relative). Symbolic links are not followed: it is about display."""
    text = os.fspath(path) if not isinstance(path, str) else path
    if not os.path.isabs(text):
        return text
    norm = os.path.normpath(text)
    for home in _homes():
        rest = _under(norm, home)
        if rest is not None:
            return "~" if not rest else f"~/{rest}"
    from . import paths           # here, not at import: paths must stay importable from anywhere
    root = os.path.normpath(str(paths.cache_dir()))
    rest = _under(norm, root) if root != os.sep else None
    if rest is not None:
        return CACHE_ROOT_LABEL if not rest else f"{CACHE_ROOT_LABEL}/{rest}"
    return text


def scrub(text: str) -> str:
    """Free text (a log line, a message) for an artifact: redact() and every home directory
    prefix shown as `~`."""
    text = redact(text)
    for home in _homes():
        if home in text:
            text = re.sub(r"(?<![\w./~-])" + re.escape(home) + r"(?=/|$|[\s'\":;,)\]}])", "~",
                          text)
    return text


def line_scrubber():
    """scrub() for raw output lines (a build log streams bytes), with the home directories and
    the environment's credentials taken once, when the command starts: a Buildroot log has a
    million lines. A line that no pattern, credential or home directory matches is returned
    as it is, decided on the bytes, without decoding."""
    homes = _encoded(_homes())
    held = _encoded(known_secrets())
    patterns = _BYTE_PATTERNS

    def clean(line: bytes) -> bytes:
        if not any(p.search(line) for p in patterns) and not any(h in line for h in homes) \
                and not any(x in line for x in held):
            return line
        text = line.decode("utf-8", "surrogateescape")
        cleaned = scrub(text)
        return line if cleaned == text else cleaned.encode("utf-8", "surrogateescape")
    return clean


def scrub_bytes(line: bytes) -> bytes:
    """scrub() for one raw line (line_scrubber for many)."""
    return line_scrubber()(line)
