"""The exceptions Cohort raises, as Python classes (made by the extension).

``CohortError`` is a ``RuntimeError``; ``InvalidArgument`` is also a ``ValueError``.
``InternalError`` (alias ``HorovodInternalError``) means the communication layer failed: a peer
died, a connection broke or a collective timed out; ``elastic.run`` recovers from it.
``StoreUnreachable`` means the launcher's rendezvous store (its server, or etcd) did not answer in
time, as when ``init()`` runs without a launcher that still serves the job.
"""

from cohort._C import (  # noqa: F401
    CheckpointError,
    CohortError,
    HostsUpdatedInterrupt,
    InternalError,
    InvalidArgument,
    MismatchError,
    NotInitialized,
    ShutdownError,
    StallError,
    StoreUnreachable,
)

# Horovod's name for the same error, so `except hvd.HorovodInternalError` keeps working.
HorovodInternalError = InternalError

# What `from cohort._errors import *` brings: every error class above, so that the packages that
# re-export them (cohort, cohort.torch) need not repeat the list.
__all__ = sorted(name for name, value in globals().items()
                 if isinstance(value, type) and issubclass(value, Exception))
