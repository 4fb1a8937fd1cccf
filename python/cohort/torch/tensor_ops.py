"""Cohort's collectives on torch.Tensor, over the extension's raw calls (``cohort._C.*_raw``).

The extension links no libtorch: it takes a tensor as (data pointer, shape, dtype code, device)
and hands runtime-owned results back as DLPack capsules. What torch knows stays here, in Python:
the checks (in torch's words where torch has them), contiguous staging of non-contiguous tensors,
int16 moved as float16, autograd's version counter after an in-place call, waiting for torch's
CUDA stream, and ``Work``, which keeps every tensor a collective reads or writes alive until the
collective completes, also when it is dropped unwaited. The functions keep the names and
arguments of the C++ adapter (torch/include/cohort/torch/collectives.h): the tensor(s), then
(op, prescale, postscale,) process set id, name.
"""

import threading

import torch
from torch.utils import dlpack as _dlpack

from cohort import _C

# cohort::DataType's values (include/cohort/types.h).
_CODES = {
    torch.uint8: 0, torch.int8: 1, torch.int32: 2, torch.int64: 3, torch.float16: 4,
    torch.bfloat16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 8,
}
assert len(_CODES) == _C.num_dtypes, "cohort._C and tensor_ops.py disagree on the dtypes"
_SUPPORTED = ("bool, uint8, int8, int32, int64, float16, bfloat16, float32, float64; and int16 "
              "for the collectives that only move data: allgather, broadcast, alltoall")


def dtype_name(dtype):
    """Torch's user-facing name of a dtype ("complex64", "int16", ...), for error messages."""
    return str(dtype).replace("torch.", "")


def _code(dtype):
    code = _CODES.get(dtype)
    if code is None:
        raise _C.InvalidArgument(f"cohort.torch: dtype {dtype_name(dtype)} is not supported "
                                 f"(supported: {_SUPPORTED})")
    return code


# --- Checks ------------------------------------------------------------------------------------

def _where(what):
    return f"cohort.torch.{what}: "


def check_tensor(tensor, what):
    """InvalidArgument unless ``tensor`` can go through a collective of this build."""
    where = _where(what)
    if tensor is None:
        raise _C.InvalidArgument(where + "the tensor is undefined")
    if tensor.is_cuda and not _C.cuda_built:
        raise _C.InvalidArgument(
            where + "CUDA tensor on a CPU-only build of Cohort: this build has no CUDA path, so "
            "it cannot order the collective after torch's CUDA stream; move the tensor to the CPU")
    if tensor.is_cuda and not cuda_tensors_work():
        raise _C.InvalidArgument(
            where + f"CUDA tensor of a torch built for CUDA {torch.version.cuda}, but this build "
            f"of Cohort is for CUDA {_C.cuda_major}: one process cannot hold both CUDA runtimes; "
            "move the tensor to the CPU or use a Cohort built for the CUDA of this torch")
    if not tensor.is_cuda and tensor.device.type != "cpu":
        raise _C.InvalidArgument(
            where + f"tensor on device {tensor.device}; Cohort takes CPU tensors and, in builds "
            "with its CUDA path, CUDA tensors")
    if tensor.layout != torch.strided:
        raise _C.InvalidArgument(where + "sparse or other non-strided tensors are not supported")
    _code(tensor.dtype)


def cuda_tensors_work():
    """This build has a CUDA path, for the CUDA major version this torch was built for."""
    version = torch.version.cuda or ""
    major = int(version.split(".")[0]) if version[:1].isdigit() else 0
    return bool(_C.cuda_built) and major == _C.cuda_major


def _check_group(tensors, what):
    for t in tensors:
        check_tensor(t, what)
    for i, t in enumerate(tensors[1:], start=1):
        if t.device != tensors[0].device:
            raise _C.InvalidArgument(
                _where(what) + f"tensor {i} is on {t.device} but tensor 0 on {tensors[0].device}; "
                "a grouped call takes tensors on one device (no mixing of CPU and CUDA tensors)")


def _check_in_place(tensor, what):
    """Refuses, in torch's words, what torch's own in-place ops refuse while grad mode is on."""
    if not torch.is_grad_enabled() or not tensor.requires_grad:
        return
    where = _where(what)
    base = tensor._base
    if base is not None and base.is_leaf and base.requires_grad:
        raise _C.InvalidArgument(where + "a view of a leaf Variable that requires grad is being "
                                 "used in an in-place operation.")
    if tensor.is_leaf:
        raise _C.InvalidArgument(where + "a leaf Variable that requires grad is being used in an "
                                 "in-place operation.")


def _mark_modified(tensor):
    """Bumps ``tensor``'s version counter, as torch's in-place ops do, so that backward() refuses
    a tensor it saved that the collective overwrites. A detached alias shares the counter, and an
    in-place metadata op that changes nothing is the cheapest op that counts."""
    alias = tensor.detach()
    alias.as_strided_(alias.size(), alias.stride(), alias.storage_offset())


# --- Tensors as the extension sees them ----------------------------------------------------------

def _describe(tensor):
    """(data pointer, shape, dtype code, device) of a contiguous, checked tensor."""
    device = tensor.device.index if tensor.is_cuda else -1
    return (tensor.data_ptr(), tuple(tensor.shape), _code(tensor.dtype), device)


def _wait_for_producer(tensor):
    """The runtime's stream reads the memory after torch's current stream has written it: a host
    wait for that stream, which is simple and always right."""
    if tensor.is_cuda:
        torch.cuda.current_stream(tensor.device).synchronize()


def _as_movable(tensor):
    """int16 has no Cohort type; the collectives that only move data move it as float16."""
    return tensor.view(torch.float16) if tensor.dtype == torch.int16 else tensor


def _from_output(handle, dtype):
    """The completed handle's result as a torch tensor of ``dtype``, without a copy."""
    out = _dlpack.from_dlpack(handle.output())
    if dtype == torch.bool or dtype == torch.int16:
        return out.view(dtype)
    return out


def _name_or_default(name, op):
    return name if name else _C.default_name(op)


# --- Work --------------------------------------------------------------------------------------

# Collectives whose Work was dropped before they completed, with the tensors they still read or
# write; swept at every submission, dropped once complete.
_dropped_lock = threading.Lock()
_dropped = []


def _sweep_dropped():
    with _dropped_lock:
        _dropped[:] = [(h, keep) for h, keep in _dropped if not h.poll()]


class Work:
    """An asynchronous collective; keeps its tensors alive until it completes."""

    _SINGLE, _GROUP, _ALLTOALL = range(3)

    def __init__(self, handle, kind, keep, finish):
        self._handle = handle
        self._kind = kind
        self._keep = keep          # every tensor the collective reads or writes
        self._finish = finish      # handle -> results, once it completed
        self._results = None
        self._lock = threading.Lock()

    @property
    def name(self):
        return self._handle.name

    def poll(self):
        """True once the collective completed or failed."""
        return self._handle.poll()

    def _complete(self):
        self._handle.wait()  # raises the collective's error
        with self._lock:
            if self._results is None:
                self._results = self._finish(self._handle)
                self._finish = None
                self._keep = None
            return self._results

    def wait(self):
        """Waits; the output tensor. Raises the collective's error."""
        results = self._complete()
        if self._kind == Work._GROUP and len(results) != 1:
            raise _C.InvalidArgument(f"cohort.torch.Work('{self.name}'): a grouped allreduce has "
                                     "several results; use wait_all()")
        return results[0] if results else None

    def wait_all(self):
        """Grouped allreduce: every member's result."""
        results = self._complete()
        return results[:1] if self._kind == Work._ALLTOALL else list(results)

    def received_splits(self):
        """Alltoall: rows received from each rank (int64)."""
        if self._kind != Work._ALLTOALL:
            raise _C.InvalidArgument(f"cohort.torch.Work('{self.name}'): received_splits() is "
                                     "for an alltoall")
        return self._complete()[1]

    def __del__(self):
        keep = getattr(self, "_keep", None)
        if keep is not None and not self._handle.poll():
            with _dropped_lock:
                _dropped.append((self._handle, keep))


def _submit(kind, keep, finish, call, *args):
    _sweep_dropped()
    return Work(call(*args), kind, keep, finish)


# --- Staging -----------------------------------------------------------------------------------

def _in_place(tensor, name, op, submit, moves_data=False):
    """An in-place collective on one tensor: `submit(name, description)` gets a contiguous view;
    a non-contiguous tensor is written back once the collective completed."""
    moved = _as_movable(tensor) if moves_data else tensor
    check_tensor(moved, op)
    target = moved.detach()
    staged = target if target.is_contiguous() else target.contiguous()
    _check_in_place(tensor, op + "_")
    name = _name_or_default(name, op)
    _wait_for_producer(staged)

    def finish(_):
        if staged is not target:
            target.copy_(staged)
        return [tensor]

    work = _submit(Work._SINGLE, (target, staged), finish, submit, name, _describe(staged))
    _mark_modified(tensor)
    return work


def _owned_output(tensor, name, op, submit, moves_data=False):
    """A collective whose result the runtime allocates (allgather, reducescatter)."""
    moved = _as_movable(tensor) if moves_data else tensor
    check_tensor(moved, op)
    staged = moved.detach().contiguous()
    dtype = tensor.dtype
    name = _name_or_default(name, op)
    _wait_for_producer(staged)
    return _submit(Work._SINGLE, (staged,), lambda h: [_from_output(h, dtype)], submit, name,
                   _describe(staged))


def _fresh_copy(tensor, what):
    check_tensor(tensor, what)
    return tensor.detach().clone(memory_format=torch.contiguous_format)


# --- Allreduce ---------------------------------------------------------------------------------

def allreduce_async(tensor, op, prescale, postscale, set_id, name):
    check_tensor(tensor, "allreduce")
    if tensor.is_cuda:  # the runtime reduces device tensors in place only: reduce a copy
        return allreduce_async_(_fresh_copy(tensor, "allreduce"), op, prescale, postscale, set_id,
                                name)
    staged = tensor.detach().contiguous()
    out = torch.empty_like(staged, memory_format=torch.contiguous_format)
    name = _name_or_default(name, "allreduce")
    return _submit(Work._SINGLE, (staged, out), lambda h: [out], _C.allreduce_raw,
                   _describe(staged), _describe(out), op, prescale, postscale, set_id, name)


def allreduce(tensor, op, prescale, postscale, set_id, name):
    return allreduce_async(tensor, op, prescale, postscale, set_id, name).wait()


def allreduce_async_(tensor, op, prescale, postscale, set_id, name):
    return _in_place(tensor, name, "allreduce", lambda n, t: _C.allreduce_raw(
        t, None, op, prescale, postscale, set_id, n))


def allreduce_(tensor, op, prescale, postscale, set_id, name):
    return allreduce_async_(tensor, op, prescale, postscale, set_id, name).wait()


def grouped_allreduce_async_(tensors, op, prescale, postscale, set_id, name):
    tensors = list(tensors)
    _check_group(tensors, "grouped_allreduce")
    staged = []
    for t in tensors:
        target = t.detach()
        staged.append((target, target if target.is_contiguous() else target.contiguous()))
        _check_in_place(t, "grouped_allreduce_")
    name = _name_or_default(name, "grouped_allreduce")
    if staged:  # one device for all: one wait covers every member and staging copy
        _wait_for_producer(staged[0][1])

    def finish(_):
        for target, s in staged:
            if s is not target:
                target.copy_(s)
        return tensors

    work = _submit(Work._GROUP, staged, finish, _C.grouped_allreduce_raw,
                   [_describe(s) for _, s in staged], op, prescale, postscale, set_id, name)
    for t in tensors:
        _mark_modified(t)
    return work


def grouped_allreduce_(tensors, op, prescale, postscale, set_id, name):
    return grouped_allreduce_async_(tensors, op, prescale, postscale, set_id, name).wait_all()


def grouped_allreduce_async(tensors, op, prescale, postscale, set_id, name):
    tensors = list(tensors)
    _check_group(tensors, "grouped_allreduce")
    copies = [_fresh_copy(t, "grouped_allreduce") for t in tensors]
    return grouped_allreduce_async_(copies, op, prescale, postscale, set_id, name)


def grouped_allreduce(tensors, op, prescale, postscale, set_id, name):
    return grouped_allreduce_async(tensors, op, prescale, postscale, set_id, name).wait_all()


# --- Allgather, broadcast, alltoall, reducescatter ---------------------------------------------

def allgather_async(tensor, set_id, name):
    return _owned_output(tensor, name, "allgather",
                         lambda n, t: _C.allgather_raw(t, set_id, n), moves_data=True)


def allgather(tensor, set_id, name):
    return allgather_async(tensor, set_id, name).wait()


def broadcast_async_(tensor, root_rank, set_id, name):
    return _in_place(tensor, name, "broadcast",
                     lambda n, t: _C.broadcast_raw(t, root_rank, set_id, n), moves_data=True)


def broadcast_(tensor, root_rank, set_id, name):
    return broadcast_async_(tensor, root_rank, set_id, name).wait()


def broadcast_async(tensor, root_rank, set_id, name):
    check_tensor(_as_movable(tensor), "broadcast")
    copy = tensor.detach().clone(memory_format=torch.contiguous_format)
    return broadcast_async_(copy, root_rank, set_id, name)


def broadcast(tensor, root_rank, set_id, name):
    return broadcast_async(tensor, root_rank, set_id, name).wait()


def _splits_of(splits):
    if splits is None or splits.numel() == 0:
        return []
    if splits.dim() != 1 or splits.dtype not in (torch.int64, torch.int32):
        raise _C.InvalidArgument(
            "cohort.torch.alltoall: splits must be a 1-D int64 or int32 tensor, not "
            f"{splits.dim()}-D {dtype_name(splits.dtype)}")
    return splits.detach().to("cpu", torch.int64).tolist()


def alltoall_async(tensor, splits, set_id, name):
    check_tensor(_as_movable(tensor), "alltoall")
    counts = _splits_of(splits)
    staged = _as_movable(tensor).detach().contiguous()
    dtype = tensor.dtype
    name = _name_or_default(name, "alltoall")
    _wait_for_producer(staged)

    def finish(h):
        received = torch.tensor(h.received_splits(), dtype=torch.int64)
        return [_from_output(h, dtype), received]

    return _submit(Work._ALLTOALL, (staged,), finish, _C.alltoall_raw, _describe(staged), counts,
                   set_id, name)


def reducescatter_async(tensor, op, prescale, postscale, set_id, name):
    return _owned_output(tensor, name, "reducescatter", lambda n, t: _C.reducescatter_raw(
        t, op, prescale, postscale, set_id, n))


def reducescatter(tensor, op, prescale, postscale, set_id, name):
    return reducescatter_async(tensor, op, prescale, postscale, set_id, name).wait()
