"""The sandbox of a graded test: who runs the submission's code, within what limits,
and how everything it started is stopped.

This module uses the standard library only: the fork server (``forkserver.py``,
run as a script) loads it by path, without importing glasstorch.

**When the grader runs as root** (Gradescope runs ``run_autograder`` as root; so
do CI containers), every test process

* runs as an unprivileged user of its own: a user id no account has
  (:data:`FIRST_UID` and up), one per grading, held by a lock so that two
  gradings on one machine never share one; no supplementary groups;
* starts in a private, empty home folder (its ``HOME``, ``TMPDIR`` and current
  folder), the only place it may write;
* may pass through (search, not list) the folders on the way to the grading
  Python when one of them is closed to other users (``/root`` when Python is
  ``/root/.pyenv/...``): :meth:`Sandbox.let_through` adds an access-list entry
  naming the sandbox user alone, for the grading's duration, so that a test
  may start a new Python (multiprocessing's spawn);
* sees the grader's files owned by root: the package and the tests it runs are
  read-only (:func:`Sandbox.share`), the hidden tests and the autograder's
  own ``.classroom`` folder unreadable (:func:`Sandbox.hide`). A process of
  another user cannot open ``/proc/<grader>/cwd``, ``fd`` or ``mem`` either
  (the kernel's ptrace access check), and the test process itself is not
  dumpable (its credentials changed), so neither can its siblings;
* has limits (:func:`limit`): address space, file size, no core files, a
  number of processes;
* is stopped with everything it started, daemons included: after each test
  :func:`Sandbox.sweep` kills every process of the sandbox user (with
  ``kill(-1, SIGKILL)`` from a process of that user, repeated until none is
  left), so nothing of the submission outlives its test, and nothing runs
  when the grader writes ``results.json``.

**When it does not** (a student's own machine), the user cannot change: each
test still gets its own session (killed as a group at the end), the limits,
the private home and current folder, but the submission runs with the
grader's own rights. That is the student grading their own work.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pwd
import resource
import shutil
import signal
import stat
import struct
import sys
import tempfile
from dataclasses import dataclass, field

#: The sandbox users' ids: FIRST_UID, FIRST_UID + 1, ... (no account has them).
FIRST_UID = 61_000
#: How many gradings may run at once on one machine.
SLOTS = 100
#: Address space of one test process (numpy's and pytest's own need about 1 GiB).
MEMORY_LIMIT = 4 << 30
#: The largest file a test process may write.
FILE_LIMIT = 256 << 20
#: Processes of the sandbox user at once (worker pools of the data assignment fit).
PROCESS_LIMIT = 256


def is_root() -> bool:
    return os.geteuid() == 0


@dataclass
class Sandbox:
    """The rules for the test processes of one grading (see the module docstring).

    ``uid`` is ``None`` when the grader is not root (no user to switch to)."""

    uid: int | None
    memory_limit: int = MEMORY_LIMIT
    _lock: int | None = None
    #: Why there is no sandbox user although the grader is root (for the log).
    note: str = ""
    #: The folders :meth:`let_through` opened, with their access lists before.
    _opened: list[tuple[str, bytes | None, int]] = field(default_factory=list)

    @classmethod
    def open(cls, memory_limit: int = MEMORY_LIMIT) -> Sandbox:
        """Take a free sandbox user (as root), or none (otherwise)."""
        if not is_root():
            return cls(None, memory_limit)
        uid, lock = _take_uid()
        if not _can_become(uid):
            os.close(lock)
            note = (
                f"warning: root cannot become user {uid} here (a user namespace that maps "
                "no other user?): the tests run with the grader's own rights"
            )
            return cls(None, memory_limit, note=note)
        sandbox = cls(uid, memory_limit, lock)
        sandbox.sweep()  # nothing of an earlier grading with this user survives
        return sandbox

    def close(self) -> None:
        """Kill what is left of the sandbox user and give the user back."""
        self.sweep()
        self._close_ways()
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def let_through(self, python: str) -> list[str]:
        """Let the sandbox user search the closed folders on the way to ``python``.

        A folder that other users may not enter (no ``x`` for others, such as
        ``/root``) gets one POSIX access-list entry: the sandbox user may search
        it (open a name it knows), not list it. The files keep their own
        permissions. :meth:`close` takes the entries away again. Returns the
        folders opened (nothing when not root, or on a file system without
        access lists, where :meth:`can_run` then says what fails)."""
        if self.uid is None:
            return []
        import sysconfig

        needed = {os.path.realpath(python), sys.prefix, sys.base_prefix}
        needed.update(sysconfig.get_paths().values())
        closed = set()
        for path in needed:
            path = os.path.realpath(path)
            while True:
                parent = os.path.dirname(path)
                if os.path.isdir(path) and not os.stat(path).st_mode & stat.S_IXOTH:
                    closed.add(path)
                if parent == path:
                    break
                path = parent
        opened = []
        for folder in sorted(closed):
            try:
                before = _read_acl(folder)
                mode = os.stat(folder).st_mode
                entries = _acl_entries(before, mode)
                if (_USER, self.uid) not in {(tag, uid) for tag, _, uid in entries}:
                    _write_acl(folder, _with_user(entries, self.uid))
            except OSError:
                continue  # no access lists here: can_run reports what that costs
            self._opened.append((folder, before, mode))
            opened.append(folder)
        return opened

    def _close_ways(self) -> None:
        """Take back what :meth:`let_through` gave, leaving other entries as found."""
        while self._opened:
            folder, before, mode = self._opened.pop()
            try:
                now = _acl_entries(_read_acl(folder), os.stat(folder).st_mode)
                ours = [
                    (tag, perm, uid) for tag, perm, uid in now if (tag, uid) == (_USER, self.uid)
                ]
                rest = [entry for entry in now if entry not in ours]
                if _named(rest) == _named(_acl_entries(before, mode)):  # as found
                    if before is None:  # no list then: only the old mode bits
                        os.removexattr(folder, _ACL_NAME)
                        os.chmod(folder, stat.S_IMODE(mode))
                    else:
                        os.setxattr(folder, _ACL_NAME, before)
                elif ours:  # another grading added its own entry meanwhile: keep it
                    _write_acl(folder, rest)
            except OSError:
                pass

    def can_run(self, python: str) -> bool:
        """Whether the sandbox user can start ``python`` and read its standard library.

        Imports of a Python it cannot reach still work in a test process (see
        :func:`_reach_import_folders`); starting a new interpreter does not
        (multiprocessing's spawn start method)."""
        if self.uid is None:
            return True
        import sysconfig

        paths = [os.path.realpath(python), sysconfig.get_paths()["stdlib"]]
        pid = os.fork()
        if pid == 0:
            reachable = False
            try:
                os.setgroups([])
                os.setgid(self.uid)
                os.setuid(self.uid)
                reachable = os.access(paths[0], os.X_OK) and os.access(paths[1], os.R_OK | os.X_OK)
            finally:
                os._exit(0 if reachable else 1)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    # -------------------------------------------------------------- the files
    def share(self, path: str) -> None:
        """Make ``path`` (a tree) root's and read-only for the sandbox user."""
        self._own(path, dirs=0o755, files=0o644)

    def hide(self, path: str) -> None:
        """Make ``path`` (a tree) root's and unreadable for the sandbox user."""
        self._own(path, dirs=0o700, files=0o600)

    def _own(self, path: str, dirs: int, files: int) -> None:
        if self.uid is None:
            return
        for folder, subdirs, names in os.walk(path):
            os.lchown(folder, 0, 0)
            os.chmod(folder, dirs)
            for name in subdirs + names:
                full = os.path.join(folder, name)
                if os.path.islink(full):
                    os.unlink(full)  # a link could point anywhere; the grader's trees hold none
                    continue
                os.lchown(full, 0, 0)
                if name in names:
                    executable = os.stat(full).st_mode & stat.S_IXUSR
                    os.chmod(full, files | (0o111 & dirs if executable else 0))

    def traversable(self, path: str) -> None:
        """Let the sandbox user pass through ``path`` (a folder) without listing it."""
        if self.uid is not None:
            os.lchown(path, 0, 0)
            os.chmod(path, 0o711)

    def make_home(self, parent: str) -> str:
        """A new, empty folder in ``parent`` that only the test process may use."""
        home = tempfile.mkdtemp(prefix="home-", dir=parent)
        if self.uid is not None:
            os.chown(home, self.uid, self.uid)
        os.chmod(home, 0o700)
        return home

    def remove_home(self, home: str) -> None:
        """Delete a home folder after its test (after :meth:`sweep`: nobody writes there)."""
        shutil.rmtree(home, ignore_errors=True)

    # -------------------------------------------------------------- the process
    def enter(self, home: str) -> None:
        """In a freshly forked test process: become the sandbox user, with the limits.

        Called before any of the submission's code is imported. Never returns
        to the caller's rights: a failure here raises, and the caller exits."""
        limit(self.memory_limit, processes=PROCESS_LIMIT if self.uid is not None else None)
        if self.uid is not None:
            folders = _open_import_folders()
            os.setgroups([])
            os.setgid(self.uid)
            os.setuid(self.uid)  # real, effective and saved: no way back
            if os.getuid() == 0 or os.geteuid() == 0:
                raise PermissionError("the test process is still root")
            _reach_import_folders(folders)
        os.umask(0o077)
        os.chdir(home)
        os.environ.update(HOME=home, TMPDIR=home, TMP=home, TEMP=home)
        tempfile.tempdir = None  # tempfile cached the grader's choice: look again

    def sweep(self) -> None:
        """Kill every process of the sandbox user (nothing, when not root).

        A child of the grader becomes that user and sends ``SIGKILL`` to every
        process it may signal (``kill(-1)``: exactly that user's); the grader
        then looks in ``/proc`` for any process of the user still alive (one
        forked while the others were killed) and sends the killer again."""
        if self.uid is None:
            return
        for _ in range(1000):
            if not self.processes():
                return
            pid = os.fork()
            if pid == 0:  # the killer
                try:
                    os.setgroups([])
                    os.setgid(self.uid)
                    os.setuid(self.uid)
                    for _ in range(10):
                        os.kill(-1, signal.SIGKILL)  # spares the killer itself
                finally:
                    os._exit(0)
            os.waitpid(pid, 0)
        raise RuntimeError(f"could not stop the processes of the sandbox user {self.uid}")

    def processes(self) -> list[int]:
        """The live processes (not zombies) whose real user is the sandbox user."""
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/status") as file:
                    fields = dict(line.split(":", 1) for line in file if ":" in line)
            except OSError:
                continue  # it ended meanwhile
            uid = int(fields.get("Uid", "-1").split()[0])
            if uid == self.uid and not fields.get("State", "").strip().startswith(("Z", "X")):
                found.append(int(name))
        return found


def _open_import_folders() -> dict[str, int]:
    """A descriptor of every folder imports come from (opened while still root)."""
    folders = {}
    for entry in sys.path:
        if entry and entry not in folders and os.path.isdir(entry):
            folders[entry] = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)
    return folders


def _reach_import_folders(folders: dict[str, int]) -> None:
    """Import through ``/proc/self/fd/<n>`` from the folders the sandbox user cannot reach.

    Python may live under a folder only root may enter (``/root/.pyenv``, a
    virtual environment in a home): its files are readable, the way to them
    is not. A descriptor opened before the switch leads there without
    searching the folders above, for the interpreter's own imports only
    (the standard library, pytest, NumPy); the descriptors of the folders the
    user can reach anyway are closed."""
    moved = {}
    for entry, descriptor in folders.items():
        if os.access(entry, os.R_OK | os.X_OK):
            os.close(descriptor)
        else:
            moved[entry] = f"/proc/self/fd/{descriptor}"
    if not moved:
        return

    def reach(path: str) -> str:
        for entry, through in moved.items():
            if path == entry or path.startswith(entry + os.sep):
                return through + path[len(entry) :]
        return path

    sys.path[:] = [reach(entry) for entry in sys.path]
    sys.path_importer_cache.clear()
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):  # a package's submodules are looked for there
            search[:] = [reach(entry) for entry in search]


# POSIX access lists as Linux keeps them, in a folder's ``system.posix_acl_access``
# attribute: a version number, then (tag, permissions, id) entries sorted by tag
# and id. A folder without the attribute has only its mode bits, which are the
# same list with three entries (owner, group, others).
_ACL_NAME = "system.posix_acl_access"
_ACL_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _GROUP, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
_NO_ID = 0xFFFFFFFF
_SEARCH = 0o1


def _read_acl(folder: str) -> bytes | None:
    """The folder's access list as stored, or None when it has only mode bits."""
    try:
        return os.getxattr(folder, _ACL_NAME)
    except OSError as error:
        if error.errno == errno.ENODATA:
            return None
        raise


def _acl_entries(raw: bytes | None, mode: int) -> list[tuple[int, int, int]]:
    """The (tag, permissions, id) entries of a stored list, or of the mode bits."""
    if raw is None:
        return [
            (_USER_OBJ, (mode >> 6) & 7, _NO_ID),
            (_GROUP_OBJ, (mode >> 3) & 7, _NO_ID),
            (_OTHER, mode & 7, _NO_ID),
        ]
    count = (len(raw) - 4) // 8
    return [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range(count)]


def _with_user(entries: list[tuple[int, int, int]], uid: int) -> list[tuple[int, int, int]]:
    """``entries`` plus "user ``uid`` may search", with the mask that lets it through.

    A list with named users needs a mask entry (the most any of them, or the
    owning group, gets); without one, the mask is the owning group's rights,
    so nobody else gains anything but the new entry's search right."""
    group = next(perm for tag, perm, _ in entries if tag == _GROUP_OBJ)
    masks = [perm for tag, perm, _ in entries if tag == _MASK]
    mask = (masks[0] if masks else group) | _SEARCH
    kept = [entry for entry in entries if entry[0] != _MASK]
    return [*kept, (_USER, _SEARCH, uid), (_MASK, mask, _NO_ID)]


def _named(entries: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """The entries but the mask (which follows from the others)."""
    return sorted(entry for entry in entries if entry[0] != _MASK)


def _write_acl(folder: str, entries: list[tuple[int, int, int]]) -> None:
    entries = sorted(entries, key=lambda entry: (entry[0], entry[2]))
    packed = b"".join(struct.pack("<HHI", *entry) for entry in entries)
    os.setxattr(folder, _ACL_NAME, struct.pack("<I", _ACL_VERSION) + packed)


def limit(memory: int, processes: int | None = None) -> None:
    """Resource limits of the calling process and its children."""
    for name, value in (
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_FSIZE, FILE_LIMIT),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NPROC, processes),
    ):
        if value is None:
            continue
        soft, hard = resource.getrlimit(name)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(name, (value, value))


def _can_become(uid: int) -> bool:
    """Whether a child of this (root) process can switch to ``uid``."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os._exit(0)
        except BaseException:  # noqa: BLE001 - the answer is the exit status
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _take_uid() -> tuple[int, int]:
    """A free sandbox user id and the lock that holds it (root only)."""
    folder = os.path.join(tempfile.gettempdir(), "glasstorch-grader-users")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not a folder only root may use; remove it")
    for uid in range(FIRST_UID, FIRST_UID + SLOTS):
        try:
            pwd.getpwuid(uid)
            continue  # an account has it: not ours to kill
        except KeyError:
            pass
        lock = os.open(os.path.join(folder, str(uid)), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(lock)
            if error.errno in (errno.EWOULDBLOCK, errno.EACCES):
                continue
            raise
        return uid, lock
    raise RuntimeError(f"no free sandbox user among {FIRST_UID}..{FIRST_UID + SLOTS - 1}")
