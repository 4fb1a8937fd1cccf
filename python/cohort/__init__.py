"""Cohort: elastic distributed training in the style of Horovod.

Use the framework package: ``import cohort.torch as hvd``.
"""

# torch first: the extension links libtorch_python, whose symbols torch's import loads.
import torch as _torch  # noqa: F401

from cohort._errors import (  # noqa: F401
    CheckpointError,
    CohortError,
    HorovodInternalError,
    HostsUpdatedInterrupt,
    InternalError,
    InvalidArgument,
    MismatchError,
    NotInitialized,
    ShutdownError,
    StallError,
)

__version__ = "0.1.0"
