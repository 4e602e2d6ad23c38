"""The Python tools' output files, by the rule of reference/lmcache/core/regular_file.h
(docs/decisions.md, "Output files"): written only where a regular file or nothing is -- never
over a directory, a device, a FIFO or a socket, never through a symbolic link -- whole or not at
all (a temporary file beside it, fsync, rename). bench/tools/compare.py and
reports/tools/compare_reports.py (--json) use it.
"""
import argparse
import itertools
import os
import stat

_RULE = 'output files are written only where a regular file or nothing is'
_counter = itertools.count()


def _what(mode):
    for test, name in ((stat.S_ISREG, 'a regular file'), (stat.S_ISDIR, 'a directory'),
                       (stat.S_ISCHR, 'a character device'), (stat.S_ISBLK, 'a block device'),
                       (stat.S_ISFIFO, 'a FIFO'), (stat.S_ISSOCK, 'a socket')):
        if test(mode):
            return name
    return 'of an unknown file type'


def check_output_path(path):
    """Raises ValueError, its message starting with the quoted path, unless `path` may be
    written as an output file: not empty, not ending in '/', its last component no symbolic
    link and either absent or a regular file, in an existing directory."""
    if not path:
        raise ValueError("'' is not a file name")
    if path.endswith('/'):
        raise ValueError(f"'{path}' names a directory, not a file: {_RULE}")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        st = None
    if st is not None:
        if stat.S_ISREG(st.st_mode):
            return
        if stat.S_ISLNK(st.st_mode):
            raise ValueError(f"'{path}' is a symbolic link to '{os.readlink(path)}': output files "
                             "are never written through a symbolic link; name the file itself")
        raise ValueError(f"'{path}' is {_what(st.st_mode)}, not a regular file: {_RULE}")
    directory = os.path.dirname(path) or '.'
    try:
        dst = os.stat(directory)
    except FileNotFoundError:
        raise ValueError(f"'{path}': its directory '{directory}' does not exist") from None
    except OSError as e:
        raise ValueError(f"'{path}': its directory '{directory}' cannot be examined: "
                         f"{e.strerror}") from None
    if not stat.S_ISDIR(dst.st_mode):
        raise ValueError(f"'{path}': '{directory}' is {_what(dst.st_mode)}, not a directory")


def output_path(path):
    """An argparse `type=` for an output file argument: the path, checked (a usage error, exit 2,
    naming the option otherwise)."""
    try:
        check_output_path(path)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return path


def write_output_file(path, text):
    """Writes `text` (UTF-8) as the whole of the output file `path`: checked, into
    '<path>.tmp.<pid>.<n>' (created exclusively), fsynced, checked again and renamed over it.
    Raises ValueError (the check) or OSError; `path` is then left as it was."""
    check_output_path(path)
    tmp = f'{path}.tmp.{os.getpid()}.{next(_counter)}'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        check_output_path(path)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
