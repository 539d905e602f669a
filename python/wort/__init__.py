"""wort: a crash-consistent persistent key-value store (wort::Store) for Python.

    import wort
    with wort.open("/dev/shm/my.pool", kind="wort", size=256 << 20) as db:
        db[b"k"] = b"v"                      # durable when it returns
        db.get(b"k")                         # b"v", or None when absent
        for k, v in db.items(b"a", b"b"):    # ascending, start <= k < stop
            ...
        with db.batch() as b:                # all or none, also across a crash
            b.put(b"x", b"1"); b.delete(b"y")

Keys and values are bytes-like (bytes, bytearray, memoryview); str raises TypeError.
Store operations release the GIL. Errors raise a subclass of wort.Error carrying the
library's message; its .status is the wort::Status name:

    wort::Status        exception
    not_found           wort.NotFoundError
    exists              wort.ExistsError
    out_of_space        wort.OutOfSpaceError
    corrupt             wort.CorruptError          (a stored value failed its checksum)
    invalid_argument    wort.InvalidArgumentError  (key or value too long, bad kind)
    io_error            wort.IoError
    no_such_file        wort.NoSuchFileError
    truncated           wort.TruncatedError
    not_a_pool          wort.NotAPoolError          (not a wort store's pool)
    newer_version       wort.NewerVersionError
    wrong_kind          wort.WrongKindError
    in_use              wort.InUseError             (the pool is open elsewhere)
    (closed)            wort.ClosedError            (also a ValueError; .status is None)

A missing key is not an error: get() answers None, delete() False, db[key] and
del db[key] raise KeyError.
"""
from ._wort import (  # noqa: F401
    MAX_VALUE_SIZE,
    Batch,
    ClosedError,
    CorruptError,
    Db,
    Error,
    ExistsError,
    InUseError,
    InvalidArgumentError,
    IoError,
    Items,
    NewerVersionError,
    NoSuchFileError,
    NotAPoolError,
    NotFoundError,
    OutOfSpaceError,
    TruncatedError,
    WrongKindError,
    kinds,
    open,
)

__all__ = [
    "open", "kinds", "Db", "Batch", "Items", "MAX_VALUE_SIZE", "Error", "ClosedError",
    "NotFoundError", "ExistsError", "OutOfSpaceError", "CorruptError", "InvalidArgumentError",
    "IoError", "NoSuchFileError", "TruncatedError", "NotAPoolError", "NewerVersionError",
    "WrongKindError", "InUseError",
]
