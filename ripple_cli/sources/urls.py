"""Inputs and outputs named by URL: `s3://` (`s3a://`, Hadoop's name for
it, is taken as the same), `gs://`, `hdfs://` and `file://`, through
pyarrow's filesystems (pyarrow is imported only when a URL is used).

Credentials and endpoints come the standard way: for S3 the AWS SDK's own
chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
AWS_PROFILE, ~/.aws, instance roles), AWS_REGION (or AWS_DEFAULT_REGION),
and AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL for an S3-compatible server
(the AWS variables; pyarrow's S3 does not read the endpoint ones itself,
so they are read here); for GCS and HDFS the filesystem's own settings,
and for a GCS emulator the variables Google's own clients take,
CLOUD_STORAGE_EMULATOR_ENDPOINT or STORAGE_EMULATOR_HOST (anonymous, as
those clients are with an emulator).
"""

from __future__ import annotations

import atexit
import fnmatch
import gc
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from ripple_cli.errors import InputUnreadable, UsageProblem

if TYPE_CHECKING:
    import pyarrow.fs as pafs

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# The scheme as pyarrow knows it.
SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs", "hdfs": "hdfs", "file": "file"}
_GLOB_CHARS = frozenset("*?[")


def _pafs() -> Any:
    """pyarrow.fs, or the one line that says which extra brings it."""
    try:
        import pyarrow.fs as pafs
    except ImportError:
        raise UsageProblem("inputs and outputs by URL need pyarrow: pip install 'ripple-cli[arrow]'") from None
    return pafs


def is_url(spec: str) -> bool:
    return _URL.match(spec) is not None


@dataclass(frozen=True)
class Url:
    """A URL split into the scheme as written and the filesystem's path."""

    scheme: str  # as written: s3a stays s3a in the names of what is found
    path: str  # the filesystem's: bucket/key for S3 and GCS, /abs/path for file and HDFS

    @property
    def text(self) -> str:
        return f"{self.scheme}://{self.path}"

    def child(self, path: str) -> Url:
        return Url(self.scheme, path)

    def filesystem(self) -> pafs.FileSystem:
        return _filesystem(SCHEMES[self.scheme], self._authority(), _settings())

    def _authority(self) -> str:
        # HDFS names its namenode in the URL; the others' first segment is a bucket.
        return self.path.split("/", 1)[0] if SCHEMES[self.scheme] == "hdfs" else ""


def parse(spec: str) -> Url:
    m = _URL.match(spec)
    assert m is not None, spec
    scheme = m.group(1).lower()
    if scheme not in SCHEMES:
        known = ", ".join(f"{s}://" for s in SCHEMES)
        raise UsageProblem(f"{spec}: unknown scheme {scheme}:// (known: {known}, and local paths)")
    rest = spec[m.end() :]
    if SCHEMES[scheme] == "file":
        rest = "/" + rest.lstrip("/")
    elif SCHEMES[scheme] != "hdfs" and (not rest or rest.startswith("/")):  # s3:///key: a bucket first, always
        raise UsageProblem(f"{spec}: no bucket after {scheme}:// ({scheme}://BUCKET/...)")
    return Url(scheme, rest)


GCS_EMULATOR = ("CLOUD_STORAGE_EMULATOR_ENDPOINT", "STORAGE_EMULATOR_HOST")  # google-cloud-cpp's, then the others'


# What tells Google's clients where their credentials are (AIP-4110), and
# the variables that name a metadata server (as google-auth reads them).
GCS_CREDENTIALS = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "HOME",
    "GCE_METADATA_HOST",
    "GCE_METADATA_ROOT",
)
_GCE_PRODUCT = "/sys/class/dmi/id/product_name"  # "Google Compute Engine" on GCE and GKE nodes


def _settings() -> tuple[tuple[str, str], ...]:
    """The AWS, GCS and emulator variables, read on each call (an executor's
    environment is its own): a filesystem made with others is not reused."""
    wanted = (*GCS_EMULATOR, *GCS_CREDENTIALS)
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_") or k in wanted))


def _gcs_credentials_or_fail(env: dict[str, str]) -> None:
    """Fail in one line when Google's default credentials cannot be found.

    Why: with none of them, google-cloud-cpp (under pyarrow) falls back to
    the GCE metadata server and, off Google Cloud, retries it for many
    minutes before the first request fails: a hang to the user.  The chain
    looked at is AIP-4110's: GOOGLE_APPLICATION_CREDENTIALS, gcloud's
    application-default file, then a metadata server, taken to be there on
    a Google machine (its DMI product name, as google-auth checks it) or
    when GCE_METADATA_HOST / GCE_METADATA_ROOT names one."""
    named = env.get("GOOGLE_APPLICATION_CREDENTIALS")
    if named:
        if not os.path.isfile(named):
            raise InputUnreadable(f"gs://: GOOGLE_APPLICATION_CREDENTIALS names {named}, which is not a file")
        return
    config = env.get("CLOUDSDK_CONFIG") or os.path.join(env.get("HOME", "~"), ".config", "gcloud")
    if os.path.isfile(os.path.join(os.path.expanduser(config), "application_default_credentials.json")):
        return
    if env.get("GCE_METADATA_HOST") or env.get("GCE_METADATA_ROOT"):
        return
    try:
        with open(_GCE_PRODUCT, encoding="ascii", errors="replace") as f:
            if f.read().strip().startswith("Google"):
                return
    except OSError:
        pass
    raise InputUnreadable(
        "gs://: no Google Cloud credentials (set GOOGLE_APPLICATION_CREDENTIALS to a key file, run"
        " `gcloud auth application-default login`, or set STORAGE_EMULATOR_HOST for an emulator)"
    )


def _endpoint(url: str, kwargs: dict[str, object]) -> None:
    """An endpoint URL as pyarrow's endpoint_override and scheme."""
    m = _URL.match(url)
    if m:
        kwargs["scheme"] = m.group(1).lower()
        url = url[m.end() :]
    kwargs["endpoint_override"] = url.rstrip("/")


def _release_filesystems() -> None:
    """At exit, before pyarrow finalizes S3 (atexit runs this first: it is
    registered after pyarrow's own handler): the cached filesystems go, and
    what else holds one.  An S3 filesystem still alive when the AWS SDK is
    shut down aborts the process ("terminate called without an active
    exception", exit 134) after a run that did all its work."""
    _filesystem.cache_clear()
    gc.collect()


@lru_cache(maxsize=16)
def _filesystem(scheme: str, authority: str, settings: tuple[tuple[str, str], ...]) -> pafs.FileSystem:
    pafs = _pafs()
    if _filesystem.cache_info().currsize == 0:  # the first: pyarrow.fs's own atexit is registered by now
        atexit.unregister(_release_filesystems)
        atexit.register(_release_filesystems)
    env = dict(settings)
    try:
        if scheme == "s3":
            endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
            region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
            kwargs: dict[str, object] = {"region": region or "us-east-1"}
            if endpoint:
                _endpoint(endpoint, kwargs)
            return pafs.S3FileSystem(**kwargs)
        if scheme == "gs":
            emulator = next((env[k] for k in GCS_EMULATOR if env.get(k)), None)
            if emulator is None:
                _gcs_credentials_or_fail(env)
                return pafs.GcsFileSystem()
            gcs: dict[str, object] = {"anonymous": True}
            # STORAGE_EMULATOR_HOST may be host:port alone; pyarrow's scheme is https unless told.
            _endpoint(emulator if _URL.match(emulator) else f"http://{emulator}", gcs)
            return pafs.GcsFileSystem(**gcs)
        if scheme == "hdfs":
            host, _, port = authority.partition(":")
            return pafs.HadoopFileSystem(host or "default", int(port or 0))
        return pafs.LocalFileSystem()
    except (OSError, ValueError) as e:
        raise InputUnreadable(f"{scheme}://: cannot reach the filesystem: {_first_line(e)}") from None


def _fs_path(url: Url) -> str:
    """The path the filesystem object takes (HDFS's without its namenode)."""
    if SCHEMES[url.scheme] == "hdfs":
        return "/" + url.path.split("/", 1)[1] if "/" in url.path else "/"
    return url.path


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    # The AWS SDK's request id says nothing to a reader.
    return re.sub(r"\s*\(Request ID: [^)]*\)", "", text)


def url_error(name: str, e: OSError) -> InputUnreadable:
    """One line for a filesystem error: no such file, no such bucket, access denied..."""
    if isinstance(e, FileNotFoundError):
        return InputUnreadable(f"{name}: no such file")
    text = _first_line(e)
    m = re.search(r"AWS Error (\w+)", text)
    if m:
        kind = m.group(1)
        causes = {
            "NO_SUCH_BUCKET": "no such bucket",
            "ACCESS_DENIED": "access denied (check the credentials)",
            "INVALID_ACCESS_KEY_ID": "the access key is not known (check the credentials)",
            "SIGNATURE_DOES_NOT_MATCH": "the secret key does not match (check the credentials)",
            "NETWORK_CONNECTION": "cannot connect to the endpoint",
        }
        detail = text.split(" operation: ", 1)[-1]
        status = re.search(r"HTTP status (\d+)", text)
        if kind not in causes and status is not None and detail.strip() in ("", "No response body."):
            # An answer with no reason in it (pyarrow: "No response body."),
            # as a server that checks credentials may give a request with none.
            detail = f"the endpoint refused the request (HTTP {status.group(1)}, no reason given)"
            if not _aws_credentials_given():
                detail += "; no credentials were found (AWS_ACCESS_KEY_ID, AWS_PROFILE, ~/.aws)"
        return InputUnreadable(f"{name}: {causes.get(kind, detail)}")
    return InputUnreadable(f"{name}: {text}")


def _aws_credentials_given() -> bool:
    """Whether the environment or ~/.aws names any credentials (an instance
    role cannot be seen from here: this is for the message only)."""
    names = ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE")
    if any(os.environ.get(n) for n in (*names, "AWS_CONTAINER_CREDENTIALS_FULL_URI")):
        return True
    home = os.path.expanduser("~/.aws")
    return any(os.path.exists(os.path.join(home, f)) for f in ("credentials", "config"))


# ------------------------------------------------------------------ reading


@dataclass(frozen=True)
class Found:
    name: str  # the URL, with the scheme as given
    size: int


def _info(url: Url) -> pafs.FileInfo:
    try:
        return url.filesystem().get_file_info(_fs_path(url))
    except OSError as e:
        raise url_error(url.text, e) from None


def _hidden(path: str, base: str) -> bool:
    rel = path[len(base) :].strip("/")
    return any(part.startswith(".") for part in rel.split("/"))


def _walk(url: Url) -> list[Found]:
    """The files under a directory (a prefix), sorted, hidden ones skipped."""
    pafs = _pafs()

    base = _fs_path(url)
    try:
        infos = url.filesystem().get_file_info(pafs.FileSelector(base, recursive=True))
    except OSError as e:
        raise url_error(url.text, e) from None
    files = [i for i in infos if i.type == pafs.FileType.File and not _hidden(i.path, base)]
    return [Found(_name(url, i.path), i.size or 0) for i in sorted(files, key=lambda i: i.path)]


def _name(url: Url, fs_path: str) -> str:
    if SCHEMES[url.scheme] == "hdfs":
        return url.child(url.path.split("/", 1)[0] + fs_path).text
    return url.child(fs_path).text


def _matches(pattern: list[str], parts: list[str]) -> bool:
    """Path segments against glob segments: `*`, `?`, `[...]` within a
    segment, `**` any number of segments (as glob.glob(recursive=True))."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return any(_matches(pattern[1:], parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _matches(pattern[1:], parts[1:])


def _glob(url: Url) -> list[Found]:
    parts = url.path.split("/")
    fixed = next(i for i, p in enumerate(parts) if _GLOB_CHARS & set(p))
    base = url.child("/".join(parts[:fixed]))
    pattern = parts[fixed:]
    found: list[Found] = []
    for f in _walk_all(base):
        rel = parse(f.name).path[len(base.path) :].strip("/").split("/")
        if _matches(pattern, rel):
            found.append(f)
            continue
        # A matched directory brings its files, as a local glob's does.
        for n in range(1, len(rel)):
            if _matches(pattern, rel[:n]) and not any(p.startswith(".") for p in rel[n:]):
                found.append(f)
                break
    return found


def _walk_all(url: Url) -> list[Found]:
    pafs = _pafs()

    info = _info(url)
    return _walk(url) if info.type == pafs.FileType.Directory else []


def discover_url(spec: str) -> list[Found]:
    """The files a URL names: a file, every file under a prefix (a
    directory), or a glob's matches; sorted."""
    pafs = _pafs()

    url = parse(spec)
    info = _info(url)
    if info.type == pafs.FileType.File:
        return [Found(spec, info.size or 0)]
    if info.type == pafs.FileType.Directory:
        return _walk(url)
    _check_bucket(url, spec)
    if _GLOB_CHARS & set(url.path):
        matches = _glob(url)
        if not matches:
            raise InputUnreadable(f"{spec}: no file matches")
        return matches
    raise InputUnreadable(f"{spec}: no such file or directory")


def _check_bucket(url: Url, spec: str) -> None:
    pafs = _pafs()

    if SCHEMES[url.scheme] in ("s3", "gs"):
        bucket = url.path.split("/", 1)[0]
        if _info(url.child(bucket)).type != pafs.FileType.Directory:
            raise InputUnreadable(f"{spec}: no such bucket {bucket}")


def open_url(spec: str) -> BinaryIO:
    """The file at a URL, open for reading, seekable: each read is a byte
    range request (an executor reads only its part of the file)."""
    url = parse(spec)
    try:
        f = url.filesystem().open_input_file(_fs_path(url))
    except OSError as e:
        raise url_error(spec, e) from None
    return cast("BinaryIO", f)


def open_input(path: str) -> BinaryIO:
    """A local path or a URL, open for reading; a path that cannot be
    opened is the input's one line (exit status 3), wherever it is read (a
    task writing its part files must not blame its OUT for it)."""
    if is_url(path):
        return open_url(path)
    try:
        return open(path, "rb")
    except OSError as e:
        from ripple_cli.sources.files import display_name, open_error  # (files imports this module)

        raise open_error(display_name(path), e) from None


# ------------------------------------------------------------------ writing


def destination(spec: str) -> tuple[pafs.FileSystem, str]:
    """Where an output named by a local path or a URL goes: the filesystem
    and its path (a local path made absolute)."""
    pafs = _pafs()

    if not is_url(spec):
        return pafs.LocalFileSystem(), os.path.abspath(spec)
    url = parse(spec)
    return url.filesystem(), _fs_path(url)


def renames_atomically(spec: str) -> bool:
    """Whether a file can be written under a hidden name and renamed into
    place at once: a local path, file:// and HDFS; not an object store
    (S3 and GCS copy an object to "rename" it)."""
    return not is_url(spec) or SCHEMES[parse(spec).scheme] in ("file", "hdfs")


def exists(spec: str) -> bool:
    if not is_url(spec):
        return os.path.exists(spec)
    pafs = _pafs()
    return bool(_info(parse(spec)).type != pafs.FileType.NotFound)


def check_parent(spec: str) -> None:
    """That an output's bucket (or parent directory) is there: the error
    before the job, not after it."""
    pafs = _pafs()

    url = parse(spec)
    if SCHEMES[url.scheme] in ("s3", "gs"):
        _check_bucket(url, spec)
        return
    parent = url.child(url.path.rstrip("/").rpartition("/")[0] or "/")
    if _info(parent).type != pafs.FileType.Directory:
        raise InputUnreadable(f"{spec}: directory {parent.text} does not exist")


def remove(spec: str) -> None:
    """An output replaced (--overwrite): a directory with what it holds, or a file."""
    pafs = _pafs()

    fs, path = destination(spec)
    try:
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            fs.delete_dir(path)
        elif info.type == pafs.FileType.File:
            fs.delete_file(path)
    except OSError as e:
        raise url_error(spec, e) from None
