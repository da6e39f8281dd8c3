"""The persistent compilation cache: compiled executables kept on disk across processes, opt-in
as JAX's (`secant.config.update("compilation_cache_dir", path)`, or the environment variable
SECANT_COMPILATION_CACHE_DIR).

An entry's file name is a hash of everything the executable depends on: the StableHLO text, the
serialized compile options (device assignment included), the platform, its version and device
kind, jaxlib's version and XLA_FLAGS. Its content is the serialized executable behind a
checksum of it. The checksum matters: jaxlib deserializes a damaged executable without
complaint when the damage misses its metadata (seen: one flipped byte in the middle of an
entry loaded; what such code then does is anyone's guess), so a file whose checksum does not
match is never handed to jaxlib; it is counted in `stats["corrupt"]`, and the program is
compiled again and stored afresh.

This module only reads and writes bytes; backends/runtime.py serializes and deserializes.
"""
import hashlib
import os
import tempfile
import threading
import warnings

from secant.backends.config import config

_MAGIC = b"secant-executable-1\n"
_DIGEST = hashlib.sha256().digest_size
# hits: executables read from disk; misses: not there (compiled, then stored); corrupt: a file
# that failed its checksum or that jaxlib refused (recompiled); stores: files written
stats = {"hits": 0, "misses": 0, "corrupt": 0, "stores": 0}
_lock = threading.Lock()
_warned = []


def directory():
    """The cache directory, or None when the cache is off."""
    d = config.read("compilation_cache_dir")
    return os.fspath(d) if d else None


def key(text, *parts):
    """The entry name of module `text` compiled under `parts` (bytes or str: the compile options,
    platform, device kind, versions)."""
    h = hashlib.sha256()
    for p in (text, *parts):
        b = p if isinstance(p, bytes) else str(p).encode()
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _path(d, name, ext=".exe"):
    return os.path.join(d, name + ext)


def _count(what, counts=stats):
    if counts is not None:
        with _lock:
            counts[what] += 1


def load(name, ext=".exe", counts=stats):
    """The stored bytes of entry `name`, checksum verified, or None (a miss, or a damaged file:
    counted as corrupt, and left for `store` to overwrite). `ext`: ".exe" for executables,
    ".idx" for secant/compile_index.py's records (counted there: `counts` None)."""
    d = directory()
    if d is None:
        return None
    try:
        with open(_path(d, name, ext), "rb") as f:
            data = f.read()
    except OSError:
        _count("misses", counts)
        return None
    head = len(_MAGIC) + _DIGEST
    payload = data[head:]
    if (len(data) <= head or not data.startswith(_MAGIC)
            or hashlib.sha256(payload).digest() != data[len(_MAGIC):head]):
        _count("corrupt", counts)
        return None
    _count("hits", counts)
    return payload


def refused(name):
    """jaxlib could not load entry `name` (a sound file from an incompatible build): a miss."""
    _count("corrupt")


def store(name, payload, ext=".exe", counts=stats):
    """Write entry `name` atomically (a reader never sees half a file); a cache directory that
    cannot be written is reported once, as a warning, and the program runs on uncached.
    Whether it was written."""
    d = directory()
    if d is None:
        return False
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, _path(d, name, ext))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        if not _warned:
            _warned.append(True)
            warnings.warn(f"secant: cannot write the compilation cache in {d!r} ({e}); "
                          "compiled programs are not cached", stacklevel=2)
        return False
    _count("stores", counts)
    return True
