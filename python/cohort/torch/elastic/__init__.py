"""Elastic training with Horovod's names: ``@hvd.elastic.run``, ``TorchState``, ``ElasticSampler``.

    state = hvd.elastic.TorchState(model, optimizer, train_sampler=sampler, epoch=0)

    @hvd.elastic.run
    def train(state):
        ...                 # every few steps: state.commit()

    train(state)

``run`` is Cohort's elastic::run: it syncs first (every rank starts from rank 0's values); on an
InternalError (a peer died) or HostsUpdatedInterrupt it restores the last commit, resets into the
new world, runs the reset callbacks, syncs, and calls the function again. Any other exception
reaches the caller unchanged. Outside cohortrun's elastic mode the function runs once.
"""

import functools

from cohort import _C
from cohort._errors import HorovodInternalError, HostsUpdatedInterrupt, InternalError  # noqa: F401
from cohort.torch.elastic.sampler import ElasticSampler  # noqa: F401
from cohort.torch.elastic.state import ObjectState, TorchState  # noqa: F401

State = ObjectState


def run(func):
    """Decorator: ``func(state, *args, **kwargs)`` runs under elastic recovery; returns its result."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        if not isinstance(state, ObjectState):
            raise TypeError("cohort.torch.elastic.run: the first argument must be a State "
                            f"(TorchState or ObjectState), not {type(state).__name__}")
        result = []

        def body():
            # Entered after every sync: the samplers' shares were remade.
            state._settle()
            state._repartitioned()
            result[:] = [func(state, *args, **kwargs)]

        _C.run(state._cpp, body)
        return result[0] if result else None

    return wrapper


def request_drain():
    """Leave the job at the next commit, as SIGTERM does under cohortrun's elastic launcher: every
    rank raises HostsUpdatedInterrupt after that commit, this worker exits with status 0 and its
    host leaves the job (docs/operations.md, "Draining")."""
    _C.request_drain()


def drain_requested():
    """Whether this worker was asked to drain (SIGTERM or request_drain())."""
    return _C.drain_requested()


def is_elastic():
    """Whether this process is a worker of cohortrun's elastic mode."""
    return _C.is_elastic()


def resets():
    """How many resets this process has gone through."""
    return _C.resets()


def last_reset_timings():
    """The phases of this process's last reset: round, old/new rank and size, and the teardown,
    assignment and connect durations in seconds (all zero before the first reset)."""
    return _C.last_reset_timings()
