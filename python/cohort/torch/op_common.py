"""What ``mpi_ops`` and ``grouped_ops`` share: the reduction operators, the checks of a
collective's arguments and the handles of asynchronous collectives.

``mpi_ops`` imports ``grouped_ops`` (to re-export its names, as Horovod's has them) and both import
this module, which imports neither: no module of the package imports one that imports it back.
``mpi_ops`` re-exports every public name here.
"""

import torch

from cohort import _C
from cohort._errors import InvalidArgument

# The reduction operators. Adasum is named so that scripts that mention it import, and refused
# precisely when used.
Sum = _C.ReduceOp.SUM
Average = _C.ReduceOp.AVERAGE
Min = _C.ReduceOp.MIN
Max = _C.ReduceOp.MAX
Product = _C.ReduceOp.PRODUCT


class _UnsupportedOp:
    """A Horovod reduction operator that Cohort does not implement."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


Adasum = _UnsupportedOp("Adasum")


def _check_op(op):
    if isinstance(op, _UnsupportedOp):
        raise NotImplementedError(
            f"cohort.torch: op={op.name} is not supported by Cohort "
            "(supported: Sum, Average, Min, Max, Product)")
    if not isinstance(op, _C.ReduceOp):
        raise InvalidArgument(f"cohort.torch: op must be one of Sum, Average, Min, Max, Product, "
                              f"not {op!r}")
    return op


def _resolve_op(average, op, default=Average):
    """Horovod's rules: ``average`` is the deprecated form of ``op`` and may not come with it."""
    if average is not None:
        if op is not None:
            raise ValueError("The op parameter supersedes average. Please provide only one of them.")
        return Average if average else Sum
    return _check_op(default if op is None else op)


# --- Handles -------------------------------------------------------------------------------------

class Handle:
    """An asynchronous collective in flight: pass it to ``poll`` or ``synchronize``."""

    __slots__ = ("_work", "_finish", "_result", "_done")

    def __init__(self, work, finish):
        self._work = work
        self._finish = finish
        self._done = False
        self._result = None

    def __repr__(self):
        return f"<cohort.torch handle {self._work.name}>"

    def __call__(self):
        """``synchronize(handle)``: Horovod's sparse allreduce handle is called this way."""
        return synchronize(self)


class _GroupWork:
    """The Works of a grouped call (or a sparse allreduce's two allgathers), polled as one."""

    def __init__(self, name, works):
        self.name = name
        self.works = works

    def poll(self):
        return all(w.poll() for w in self.works)


def poll(handle):
    """True once the collective has completed (or failed); never blocks."""
    return handle._done or handle._work.poll()


def synchronize(handle):
    """Waits for the collective and returns its output (raises its error)."""
    if not handle._done:
        handle._result = handle._finish(handle._work)
        handle._done = True
        handle._work = _Finished(handle._work.name)
    return handle._result


class _Finished:
    """What a handle keeps once synchronized: its name, and a poll that says done."""

    def __init__(self, name):
        self.name = name

    def poll(self):
        return True


def _check_device(tensor, what):
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"cohort.torch.{what}: expected a torch.Tensor, got "
                              f"{type(tensor).__name__}")
    if tensor.device.type not in ("cpu", "cuda"):
        raise InvalidArgument(f"cohort.torch.{what}: tensor on device '{tensor.device}'; only CPU "
                              f"tensors (and CUDA ones in NCCL builds) are supported")


def _check_all(tensors, what):
    tensors = list(tensors)
    for t in tensors:
        _check_device(t, what)
    return tensors


def _name(op, name):
    # The user's name as it is (None: the runtime numbers it, "<op>.noname.<n>"): one name is one
    # collective in flight whatever its operation, so ranks that submit different operations under
    # it fail with MismatchError rather than wait for each other (Horovod prefixes the operation,
    # docs/horovod-compatibility.md#one-name-one-collective).
    return "" if name is None else name


def _output(work):
    """A single-tensor handle's result: the output tensor."""
    return work.wait()


def _outputs(work):
    """A grouped handle's result: the list of output tensors."""
    return work.wait_all()
