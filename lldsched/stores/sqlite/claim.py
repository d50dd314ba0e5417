"""FileClaim: one live store per file, held by an OS lock that dies with its process.

A :class:`~lldsched.stores.sqlite.SqliteTaskStore` claims its file for as long as it
is open, so that a second store opened on the same file (by this process or any
other on this host) is refused with a :class:`~lldsched.errors.StoreError` instead
of two schedulers running every task twice.

**The claim** is an exclusive, non-blocking lock on a sidecar file next to the
store (``tasks.db`` → ``tasks.db.lock``): ``fcntl.flock`` on POSIX,
``msvcrt.locking`` on Windows.  The operating system drops the lock when the
descriptor is closed, which it does for a process that exits, crashes or is
killed with SIGKILL: no stale claim to clean up, no clock, no heartbeat.
``flock`` locks belong to an open file description, so two stores in one process
exclude each other as two processes do.  The sidecar holds the holder's pid and
host, only to name it in the refusal; it is never deleted (deleting a lock file
while someone may hold it lets two holders in), and it is harmless to leave.  It is
opened without following a symlink: a lock file that is one is refused, naming it.
It takes the store file's read and write bits at every open (:func:`sidecar_mode`,
:func:`match_mode`: 0600 for a store lldsched created), as a shared store's write gate
does: ``flock`` needs only a descriptor open for reading, so a lock file every user may
read (0644, the umask's, before) let any local user hold it and keep the service from
starting ("already open by pid ..." naming the last holder's note).

**Shared claims.**  A store opened with ``shared=True`` takes the same lock
*shared* (``LOCK_SH``, :meth:`FileClaim.shared`): any number of shared stores hold
it together, coordinating through leases, while an exclusive opener is refused by
them and refuses them, so shared and unshared openers of one file never mix.  A
shared claim's note names the last shared opener; one taken inside :func:`briefly` (an
operator's ``python -m lldsched tasks`` verb) names that command, and an exclusive opener
refused by it is told the file is held for a moment and to start again.  On Windows, where
``msvcrt`` has no shared lock, a shared claim takes no lock at all.

**A forked child lets go of its copy.**  A child forked while the store is open
inherits the descriptor, and with it the lock (it belongs to the open file
description both share); the child cannot use the store (:mod:`lldsched.stores.forks`
refuses it), so a hook run in every forked child closes its copy of each claim's
descriptor (:func:`_let_go_in_child`).  Closing a copy never unlocks: the lock stays
the parent's, and goes when the parent's descriptor closes.  Before, a child that
outlived its parent (a gunicorn worker after its master's SIGKILL, a process a job
forked and left running) kept the claim, and the restarted service was refused,
naming the dead parent's pid, until that child exited.

**A lock file deleted under its claim** (an operator's ``rm`` of a lock file thought
stale, a cleaner of old files) let the next opener lock a new one beside it.  The store
checks its lock file as often as its own file (:meth:`FileClaim.check`) and claims the path
again, or raises :class:`~lldsched.errors.StoreError` from every call, naming the holder,
while another opener holds it; an opener let in before that check is not told.

Limits: a symlinked path is resolved, a hard link is not; a fork made without
Python's fork hooks (uWSGI without ``py-call-osafterfork``) leaves the child holding
the claim, as before; on network file systems the lock is as good as the server's.  This is the
one-scheduler-per-file rule made true, not coordination: several schedulers
sharing one file need leases (see docs/CLUSTER.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
import sys
import weakref
from collections.abc import Callable, Iterator

from lldsched.errors import StoreError, doc_url
from lldsched.logs import STORE
from lldsched.stores.unclosed import collected

__all__ = ["FileClaim", "briefly", "claim_path", "held_unshared", "match_mode", "sidecar_mode"]

log = logging.getLogger(STORE)

SUFFIX = ".lock"
_WINDOWS_OFFSET = 1 << 20  # Windows locks a byte range: lock one past the text, not the text
# A lock file that is a symlink is refused (ELOOP), not followed: planted in a directory
# others can write, it would make the claim truncate the file it points to.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # POSIX; Windows has no such flag


def claim_path(store_path: str) -> str:
    """The sidecar lock file of the store at ``store_path`` (symlinks resolved)."""
    return os.path.realpath(store_path) + SUFFIX


class FileClaim:
    """An exclusive claim on ``store_path``, taken at construction, dropped by :meth:`release`.

    :class:`StoreError` naming the file, and the holder when it wrote its name, if
    another live store already holds it.  Not thread-safe: its owner serialises it.
    """

    def __init__(self, store_path: str, *, mode: str = "exclusive") -> None:
        self.store_path = store_path
        self.mode = mode
        self.path = claim_path(store_path)
        try:  # never through a symlink: the note below truncates the file it opens
            fd = os.open(
                self.path,
                os.O_RDWR | os.O_CREAT | os.O_APPEND | _NOFOLLOW,
                sidecar_mode(store_path),
            )
            match_mode(fd, sidecar_mode(store_path))
        except OSError as exc:
            raise StoreError(
                f"cannot claim the store {store_path!r}: cannot open its lock file "
                f"{self.path!r} ({exc})"
            ) from None
        shared = mode == "shared"
        if not _try_lock(fd, exclusive=not shared):
            holder = _holder(fd)
            os.close(fd)
            if shared:
                raise StoreError(
                    f"the store {store_path!r} is open{holder} without shared=True: shared and "
                    "unshared schedulers cannot mix on one file. Close it, or open every store "
                    "on the file with shared=True"
                )
            if holder.startswith(f" {_BRIEF}"):  # an operator's verb, for a moment (briefly)
                raise StoreError(
                    f"the store {store_path!r} is held for a moment{holder} (it lets go as "
                    "soon as its change is written): start again. Refused again, a scheduler "
                    "opened with shared=True holds the file too: stop it, or open this store "
                    "with shared=True as well"
                )
            raise StoreError(
                f"the store {store_path!r} is already open{holder}: one scheduler per file. "
                "Close that store (or stop its process) first, or open every store on the "
                f"file with shared=True (leases: {doc_url('docs/CLUSTER.md')}); two unshared "
                "schedulers on one file would run every task twice (a development server's "
                "reloader runs the application twice, in two processes: "
                f"{doc_url('docs/OPERATIONS.md#in-a-web-application')})"
            )
        # The note a refused opener reads (_holder): who holds the file.  A bare descriptor,
        # no file object: a forked child closes it with one system call (_let_go_in_child).
        me = _this_process()
        note = f"shared=True schedulers (the last to open: {me})\n" if shared else f"{me}\n"
        if shared and _brief is not None:
            note = f"{_BRIEF}{_brief} ({me})\n"
        try:
            os.ftruncate(fd, 0)
            os.write(fd, note.encode("utf-8"))  # O_APPEND: at the end, which is 0 now
        except OSError:
            pass  # the note only names the holder in a refusal: the claim is held all the same
        self._fd: int | None = fd
        _OPEN.add(self)

    def check(self) -> None:
        """Claim the file again if the lock file at :attr:`path` is no longer the one this
        claim locked (deleted, or replaced: an operator's ``rm`` of a lock file thought
        stale, a cleaner of old files), or raise :class:`StoreError` naming the holder if
        another store claimed the file since.  A deleted lock file let the next opener in
        beside this store: a second scheduler on the file, or an operator's verb whose
        change this store's scheduler then overwrote.  One ``stat`` and one ``fstat``;
        the store calls it as often as it checks its own file."""
        fd = self._fd
        if fd is None:
            return
        try:
            mine = os.fstat(fd)
            here = os.stat(self.path)
        except FileNotFoundError:
            pass  # deleted: claimed again below
        except OSError:
            return  # the folder cannot be read: nothing to tell
        else:
            if (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino):
                return
        try:
            again = FileClaim(self.store_path, mode=self.mode)
        except StoreError as exc:
            raise StoreError(
                f"the lock file {self.path!r} that claimed the store {self.store_path!r} for "
                "this process was deleted while the store was open, and the file was claimed "
                f"since by another opener ({exc}). Nothing more is written here (its "
                "scheduler keeps every task in memory meanwhile), until that opener lets go. "
                "Never delete a store's lock file: its process's exit lets it go"
            ) from None
        self._fd, again._fd = again._fd, None
        _OPEN.discard(again)
        os.close(fd)  # the lock on the file no longer at the path
        log.warning(
            "the lock file %r that claimed the store %r for this process was deleted while "
            "the store was open; the file is claimed again. Until then another scheduler "
            "or an operator's command could open the store beside this one (a change made "
            "so may have been overwritten since). Never delete a store's lock file: its "
            "process's exit lets it go",
            self.path, self.store_path,
        )  # fmt: skip

    @classmethod
    def shared(cls, store_path: str) -> FileClaim:
        """A shared claim on ``store_path``: held together with other shared claims,
        refused by (and refusing) an exclusive one."""
        return cls(store_path, mode="shared")

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Drop the claim (idempotent): closing the descriptor releases the lock."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        _OPEN.discard(self)

    def __del__(self, _collected: Callable[..., None] = collected) -> None:
        """Collected still held: a ``ResourceWarning`` naming it, then let go
        (:mod:`~lldsched.stores.unclosed`).  Its store, dropped without ``close()`` (a
        notebook cell run again), lets it go first and says so itself: this one speaks
        only where that did not come first (the two collected together, in a cycle), or
        for a claim taken without a store.  Before, the descriptor stayed open, and with
        it the lock, for the life of the process: every later store on the file was
        refused as "already open in this process", and each such store left one
        descriptor more (docs/decisions/teaching-kit.md, "A store dropped without close() lets its
        file go"); then it was let go in silence."""
        if getattr(self, "_fd", None) is not None:  # none if the constructor raised
            _collected(self, self.release)

    def __repr__(self) -> str:
        state = "held" if self._fd is not None else "released"
        return f"FileClaim({self.path!r}, {self.mode}, {state})"


def held_unshared(store_path: str) -> bool | None:
    """Whether a live unshared store holds the file at ``store_path`` (its exclusive claim),
    found without claiming it: the lock file opened to read, a shared lock tried and let go
    at once, nothing written.  False when it could be taken (no unshared store holds the
    file: a process that held it died or closed it) or there is no lock file; None when it
    cannot be told (the lock file cannot be opened here; Windows, whose ``msvcrt`` has no
    shared lock to try).  The lock is held for the two system calls between: an unshared
    store opened in that moment is refused, naming the file's last holder
    (docs/decisions/command-line.md, "A run left `running` by an unshared process that is
    gone is said so")."""
    if sys.platform == "win32":  # pragma: no cover - not run by this project's CI (Linux)
        return None
    try:
        fd = os.open(claim_path(store_path), os.O_RDONLY | _NOFOLLOW)
    except FileNotFoundError:
        return False  # never claimed (a file copied here, or an older release's)
    except OSError:
        return None
    try:
        return not _try_lock(fd, exclusive=False)
    except OSError:
        return None
    finally:
        os.close(fd)  # lets the shared lock go, if it was taken


_OPEN: weakref.WeakSet[FileClaim] = weakref.WeakSet()
"""The claims this process holds: a forked child lets go of its copies."""

_BRIEF = "by an operator's command, "
_brief: str | None = None  # what briefly() names, while it lasts


@contextlib.contextmanager
def briefly(command: str) -> Iterator[None]:
    """The shared claims taken inside are ``command``'s, held for a moment (an operator's
    verb, ``python -m lldsched tasks pause ID``): their note says so, and an unshared
    store refused by one says it is held for a moment and to start again, rather than
    naming shared schedulers that do not run (docs/decisions/command-line.md, "The command
    line")."""
    global _brief
    before, _brief = _brief, command
    try:
        yield
    finally:
        _brief = before


def _let_go_in_child() -> None:
    """In a child just forked: close its copy of every claim's descriptor.  The lock
    belongs to the open file description the parent's descriptor shares, so it stays
    the parent's (``flock`` is let go by ``LOCK_UN`` or the last close, never here)."""
    for claim in list(_OPEN):
        if claim._fd is not None:
            with contextlib.suppress(OSError):
                os.close(claim._fd)
            claim._fd = None
    _OPEN.clear()


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_let_go_in_child)


def sidecar_mode(store_path: str) -> int:
    """The mode a file beside the store at ``store_path`` is created with (its claim's
    lock file, a shared store's write gate): the store's read and write bits, 0600 if it
    has none or cannot be read, so that whoever may not open the store may not lock its
    sidecars either (a file that exists keeps its mode; the umask applies)."""
    try:
        mode = stat.S_IMODE(os.stat(store_path).st_mode) & 0o666
    except OSError:
        return 0o600
    return mode or 0o600


def match_mode(fd: int, mode: int) -> None:
    """Give the sidecar open as ``fd`` the ``mode`` :func:`sidecar_mode` says, whatever the
    umask made of it or an older release left (0644), if this process owns it (another
    user's is left as it is: its owner's next open sets it)."""
    with contextlib.suppress(OSError):
        status = os.fstat(fd)
        if stat.S_IMODE(status.st_mode) != mode and status.st_uid == os.geteuid():
            os.fchmod(fd, mode)


def _this_process() -> str:
    """How a claim's note names its holder: ``pid N on host``."""
    return f"pid {os.getpid()} on {socket.gethostname()}"


def _holder(fd: int) -> str:
    """`` (by pid N on host)`` from the holder's note, or ``""`` if it has none yet."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        note = os.read(fd, 200).decode("utf-8", "replace").strip()
    except OSError:
        return ""
    if not note:
        return " by other schedulers (shared=True)"
    if note.startswith(_BRIEF):
        return f" {note}"
    if note.startswith("shared=True"):
        return f" by {note}"
    if note.startswith(_this_process()):
        return (
            " in this process (another SqliteTaskStore on the same file, not closed: a "
            "scheduler's shutdown leaves its store open; a notebook's cell run again: "
            f"{doc_url('docs/GUIDE.md#in-a-jupyter-notebook')})"
        )
    return f" by {note}"


if sys.platform == "win32":  # pragma: no cover - not run by this project's CI (Linux)
    import msvcrt

    def _try_lock(fd: int, *, exclusive: bool) -> bool:
        if not exclusive:
            return True  # msvcrt has no shared lock: shared claims take none
        position = os.lseek(fd, 0, os.SEEK_CUR)
        os.lseek(fd, _WINDOWS_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        finally:
            os.lseek(fd, position, os.SEEK_SET)
        return True

else:
    import fcntl

    def _try_lock(fd: int, *, exclusive: bool) -> bool:
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
