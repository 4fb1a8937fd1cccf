"""Joining the job, what this build has, and process sets: Horovod's basics, over Cohort's runtime.

``cohort.torch.mpi_ops`` re-exports every name, as Horovod's ``horovod.torch.mpi_ops`` does its
basics'.
"""

import atexit
import os

import torch

from cohort import _C
from cohort.torch import tensor_ops
from cohort._errors import InvalidArgument


# --- Joining the job -----------------------------------------------------------------------------

def init(comm=None, process_sets=None):
    """Joins the job (cohortrun → Gloo, mpirun → MPI, alone → a world of one).

    ``process_sets``: ProcessSet objects to register right away, as Horovod does.
    """
    if comm is not None:
        raise NotImplementedError("cohort.torch: init(comm=...) with an MPI communicator is not "
                                  "supported; start the job with cohortrun or mpirun")
    _C.init()
    _fit_torch_threads()
    if process_sets:
        for process_set in process_sets:
            add_process_set(process_set)


def _usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _fit_torch_threads():
    """As torchrun does, and only where the user has not chosen (OMP_NUM_THREADS unset): when several
    ranks share this host, torch's intra-op thread pool shrinks to this rank's share of the cores
    (at least one). Otherwise every rank's pool takes every core and competes with the ranks'
    Cohort threads: on 2 cores and 2 ranks a small allreduce took 29-140 us with torch 2.15's pool
    against 10.6-15 us with one thread (docs/comparison.md). Never grows the pool."""
    if "OMP_NUM_THREADS" in os.environ or _C.local_size() < 2:
        return
    share = max(1, _usable_cores() // _C.local_size())
    if torch.get_num_threads() > share:
        torch.set_num_threads(share)


def shutdown():
    """Leaves the job once every rank has called it. Also done at exit if forgotten."""
    if _C.is_initialized():
        _C.shutdown()


# Horovod scripts usually leave without shutdown(); Cohort's shutdown is what lets the peers see a
# clean departure rather than a broken connection.
atexit.register(shutdown)

is_initialized = _C.is_initialized
rank = _C.rank
size = _C.size
local_rank = _C.local_rank
local_size = _C.local_size
cross_rank = _C.cross_rank
cross_size = _C.cross_size


def gloo_built():
    """Cohort always has its Gloo backend."""
    return True


def mpi_built():
    """Cohort always has its MPI backend."""
    return True


def nccl_built():
    """As Horovod's: the NCCL version this build of Cohort has (NCCL_VERSION_CODE, e.g. 21805),
    or 0 without its NCCL backend."""
    return int(_C.nccl_built)


def gloo_enabled():
    """Whether this job runs over Gloo (started by cohortrun)."""
    return _C.backend_name() == "gloo"


def mpi_enabled():
    """Whether this job runs over MPI (started by mpirun)."""
    return _C.backend_name() == "mpi"


def cuda_built():
    """Whether CUDA tensors can go through Cohort: a build with the CUDA toolkit and a torch built
    for the same CUDA major version (through NCCL, or the staged backend where NCCL cannot
    serve)."""
    return tensor_ops.cuda_tensors_work()


def rocm_built():
    """Cohort has no ROCm support."""
    return False


def ddl_built():
    """Cohort has no IBM DDL support."""
    return False


def ccl_built():
    """Cohort has no oneCCL support."""
    return False


# --- Process sets --------------------------------------------------------------------------------

class ProcessSet:
    """A subset of the ranks that runs collectives among themselves, as Horovod's ProcessSet.

    Create it with the global ranks, then register it on every rank with ``add_process_set`` (or
    ``init(process_sets=[...])``).
    """

    def __init__(self, ranks):
        self.ranks = sorted(int(r) for r in ranks) if ranks is not None else None
        self.process_set_id = None

    def _id(self):
        removed = getattr(self, "_removed_id", None)
        if self.process_set_id is None and removed is not None:
            raise InvalidArgument(f"cohort.torch: process set {removed} was removed "
                                  f"(remove_process_set); add it again to use it")
        if self.process_set_id is None:
            raise InvalidArgument("cohort.torch: this process set has not been added; call "
                                  "add_process_set() on every rank first")
        return self.process_set_id

    def size(self):
        """The number of ranks in the set."""
        return len(_C.process_set_ranks(self._id()))

    def rank(self):
        """This process's index in the set (ValueError-like InvalidArgument if not a member)."""
        members = _C.process_set_ranks(self._id())
        me = _C.rank()
        if me not in members:
            raise InvalidArgument(f"cohort.torch: rank {me} is not in process set "
                                  f"{self.process_set_id}")
        return members.index(me)

    def included(self):
        """Whether this process is a member."""
        return _C.rank() in _C.process_set_ranks(self._id())

    def __repr__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


class _GlobalProcessSet(ProcessSet):
    """Every rank of the world: process set 0, whose ranks follow the current world."""

    def __init__(self):  # pylint: disable=super-init-not-called
        self.process_set_id = 0

    @property
    def ranks(self):
        """The world's ranks (None before init)."""
        return _C.process_set_ranks(0) if _C.is_initialized() else None


global_process_set = _GlobalProcessSet()


def add_process_set(process_set):
    """Registers a ProcessSet (or a list of ranks) on every rank; returns the ProcessSet."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError("cohort.torch: this process set has already been added")
    process_set.process_set_id = _C.add_process_set(process_set.ranks)
    return process_set


def remove_process_set(process_set):
    """Removes a process set, called by every rank with the same set; as Horovod, returns True
    once it is removed (the ProcessSet is then invalidated: its process_set_id becomes None), and
    False, without communicating, for a set that was never added or the global set.

    The set's collectives that every member had submitted run first; those that some member had
    not fail with MismatchError. Its id is never reused: a collective naming it afterwards raises
    InvalidArgument saying it was removed.
    """
    if not isinstance(process_set, ProcessSet):
        raise InvalidArgument(f"cohort.torch: remove_process_set takes a ProcessSet, not "
                              f"{type(process_set).__name__}")
    process_set_id = process_set.process_set_id
    if process_set_id is None or process_set_id == 0:
        return False
    _C.remove_process_set(process_set_id)
    process_set.process_set_id = None
    process_set._removed_id = process_set_id  # pylint: disable=protected-access
    return True


def _set_id(process_set):
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise InvalidArgument(f"cohort.torch: process_set must be a ProcessSet, not "
                              f"{type(process_set).__name__}")
    return process_set._id()
