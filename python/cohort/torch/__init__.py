"""Cohort for PyTorch, with Horovod's names: ``import cohort.torch as hvd``.

The common subset of a ``horovod.torch`` script runs unchanged: init and the world's shape, every
collective (blocking, ``*_async`` with ``poll``/``synchronize``, in place), process sets,
``DistributedOptimizer``, ``broadcast_parameters``, ``broadcast_optimizer_state``,
``broadcast_object``, ``allgather_object``, ``Compression``, and ``hvd.elastic``. Calling anything
before ``init()`` raises ``NotInitialized``.
"""

from cohort._errors import *  # noqa: F401,F403 (every error class, see _errors.__all__)
from cohort.torch.compression import Compression  # noqa: F401
from cohort.torch.mpi_ops import (  # noqa: F401
    Adasum,
    Average,
    Handle,
    Max,
    Min,
    Product,
    ProcessSet,
    Sum,
    add_process_set,
    allgather,
    allgather_async,
    allreduce,
    allreduce_,
    allreduce_async,
    allreduce_async_,
    alltoall,
    alltoall_async,
    barrier,
    broadcast,
    broadcast_,
    broadcast_async,
    broadcast_async_,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    global_process_set,
    gloo_built,
    gloo_enabled,
    grouped_allgather,
    grouped_allgather_async,
    grouped_allreduce,
    grouped_allreduce_,
    grouped_allreduce_async,
    grouped_allreduce_async_,
    grouped_reducescatter,
    grouped_reducescatter_async,
    init,
    is_initialized,
    join,
    local_rank,
    local_size,
    mpi_built,
    mpi_enabled,
    nccl_built,
    poll,
    rank,
    reducescatter,
    reducescatter_async,
    remove_process_set,
    rocm_built,
    shutdown,
    size,
    sparse_allreduce_async,
    synchronize,
)
from cohort.torch.functions import (  # noqa: F401
    allgather_object,
    broadcast_object,
    broadcast_optimizer_state,
    broadcast_parameters,
)
from cohort.torch.optimizer import DistributedOptimizer  # noqa: F401
from cohort.torch.zero import ZeroRedundancyOptimizer  # noqa: F401
from cohort.torch import elastic  # noqa: F401
