"""OUT as the typed tables' writers see it: a local directory or one by URL
(s3://, gs://, hdfs://, file://), through the filesystem layer the
all-messages table is written with (urls.destination, pyarrow's)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ripple_cli.errors import InputUnreadable
from ripple_cli.sources.urls import destination, renames_atomically, url_error

if TYPE_CHECKING:
    import pyarrow.fs as pafs


@dataclass(frozen=True)
class OutDir:
    """Made where it is used (each task its own): an executor's AWS
    settings are its environment's, not the driver's."""

    spec: str  # OUT as given, named in errors
    fs: pafs.FileSystem
    root: str  # OUT on `fs`
    renames: bool  # a rename is atomic here (urls.renames_atomically)

    @classmethod
    def of(cls, spec: str) -> OutDir:
        fs, root = destination(spec)
        return cls(spec, fs, root, renames_atomically(spec))

    def path(self, *names: str) -> str:
        return "/".join((self.root.rstrip("/"), *names))

    def makedirs(self, d: str) -> None:
        self.fs.create_dir(d, recursive=True)

    def listdir(self, d: str) -> list[str]:
        """The paths of what `d` holds, sorted; none if `d` is not there.
        Listed recursively, the children taken from the paths: on an object
        store a "directory" is a prefix, and not every GCS server lists
        prefixes in a listing of one level (the emulator the tests run)."""
        import pyarrow.fs as pafs

        base = d.rstrip("/") + "/"
        found = self.fs.get_file_info(pafs.FileSelector(d, recursive=True, allow_not_found=True))
        return sorted({base + i.path[len(base) :].split("/", 1)[0] for i in found if i.path.startswith(base)})

    def staged(self, path: str) -> str:
        """Where a part file is written before it is whole.  Where renames
        are atomic, a hidden name (readers skip it) renamed by `publish`.
        On an object store a rename is a copy, not atomic: the file goes
        under its final name at once, which is safe there because an
        object appears only when its upload completes."""
        if not self.renames:
            return path
        d, name = posixpath.split(path)
        return f"{d}/.{name}.tmp"

    def publish(self, staged: str, path: str) -> None:
        if staged != path:
            self.fs.move(staged, path)

    def error(self, e: OSError) -> InputUnreadable:
        return url_error(self.spec, e)
