"""Build-once caches that threads share: each entry is built by one thread, the others wait.

A cache is a plain dict read without any lock (a hit costs one dict look-up). On a miss the
caller claims the key:

    while True:
        hit = cache.get(key)
        if hit is not None:
            return hit
        mine = once.claim(cache, key)
        if mine is once.RECURSIVE:
            ...                 # this thread is building key already (recursion)
        elif mine:
            break               # build it: this thread owns the key until release()
        # else another thread built it (or failed): look again
    try:
        cache[key] = build()
    finally:
        once.release(cache, key)

Recursion is per thread: the thread building a key that asks for it again gets RECURSIVE;
another thread asking for it waits. If waiting would deadlock (the builder waits, directly or
through other builders, on a key this thread is building: two threads entering a mutual
recursion from both ends), the asker gets RECURSIVE too, as it would had one thread entered
both, and the caller's recursion handling applies.
"""
import threading

RECURSIVE = "recursive"

_lock = threading.Lock()    # guards the two tables below; never held while building or waiting
_builds = {}                # (id(cache), key) -> _Build in progress
_waiting = {}               # thread ident -> the _Build it waits for


class _Build:
    __slots__ = ("thread", "done")

    def __init__(self, thread):
        self.thread = thread
        self.done = threading.Event()


def claim(cache, key):
    """True: the caller builds `key` of `cache` and must call release(cache, key) after.
    RECURSIVE: this thread is building it already (or would deadlock waiting for it).
    False: another thread was building it and has finished (or failed): look in the cache again.
    """
    me = threading.get_ident()
    k = (id(cache), key)
    with _lock:
        b = _builds.get(k)
        if b is None:
            _builds[k] = _Build(me)
            return True
        if b.thread == me:
            return RECURSIVE
        t = b.thread
        while True:                 # would this wait close a cycle of waits?
            w = _waiting.get(t)
            if w is None or w.done.is_set():   # (t has been woken, it waits no more)
                break
            if w.thread == me:
                return RECURSIVE
            t = w.thread
        _waiting[me] = b
    try:
        b.done.wait()
    finally:
        with _lock:
            del _waiting[me]
    return False


def release(cache, key):
    """The caller has built (or failed to build) `key`: wake the threads waiting for it."""
    with _lock:
        b = _builds.pop((id(cache), key))
        b.done.set()


def build(cache, key, make, recursive=None, valid=None):
    """cache[key], made by `make()` once (made again when `valid(hit)` says a hit is stale).
    When this thread is building `key` already, the value of `recursive()` (not cached);
    without `recursive`, `make()` again, as if there were no cache."""
    while True:
        hit = cache.get(key)
        if hit is not None and (valid is None or valid(hit)):
            return hit
        mine = claim(cache, key)
        if mine is RECURSIVE:
            return recursive() if recursive is not None else make()
        if mine:
            break
    try:
        hit = cache.get(key)    # (built between the look-up and the claim)
        if hit is None or valid is not None and not valid(hit):
            hit = cache[key] = make()
        return hit
    finally:
        release(cache, key)
