"""TorchState's commits at memory speed: a value's tensors copied into snapshot buffers that are
allocated once and reused, everything else pickled.

A commit is two steps, as the C++ State's buffers are (state/values.h): ``stage(value)`` runs
before the commit's collective, pickles the value with every tensor replaced by a reference (a few
hundred bytes for a model) and pairs each live tensor with a snapshot buffer of the same dtype,
device, shape and strides (one of the last commit's if one fits, else a new one); nothing is
copied yet, so a commit that fails on any rank leaves the last snapshot as it was (``discard()``).
Once every rank agreed, ``install()`` copies each tensor into its buffer (``Tensor.copy_``) and
makes them the snapshot. Tensors that appear later (optimizer state created at the first step) or
change shape, dtype or device get new buffers at the next commit; buffers nothing uses any more
are freed.

``load(data)`` unpickles a committed value whose tensors are the snapshot buffers themselves:
callers copy out of them (``restore_module``, ``restore_optimizer``) and never keep them.

With ``keep_previous`` (a State whose sharded values' replicas overlap the next step: the C++
State keeps the commit before the last one, and a sync may go back to it, state/values.h) an
install keeps the buffers of the snapshot it replaces as well, so the bytes of either commit
load; a load makes its generation the current one (after a step back the newer buffers are
spare, reused by the next stage).
"""

import collections
import copy
import io
import pickle

import torch

_MAGIC = b"cohort.tensor_snapshot/1\n"
_TENSOR = "cohort.tensor"


def is_snapshot(data):
    """Whether ``data`` was made by ``TensorSnapshot.stage`` (not by torch.save)."""
    return bytes(data[:len(_MAGIC)]) == _MAGIC


def _copyable(obj):
    """Tensors that get a snapshot buffer; any other tensor (sparse, quantized) is pickled."""
    return isinstance(obj, torch.Tensor) and obj.layout == torch.strided and not obj.is_quantized


def _signature(tensor):
    return (tensor.dtype, tensor.device, tuple(tensor.shape), tuple(tensor.stride()))


class _Pickler(pickle.Pickler):
    """Pickles a value with its tensors as references: the same tensor object twice is one."""

    def __init__(self, out, tensors):
        super().__init__(out, protocol=pickle.HIGHEST_PROTOCOL)
        self._tensors = tensors
        self._index = {}

    def persistent_id(self, obj):
        if not _copyable(obj):
            return None
        index = self._index.get(id(obj))
        if index is None:
            index = self._index[id(obj)] = len(self._tensors)
            self._tensors.append(obj)  # also keeps obj alive, so its id stays its own
        return (_TENSOR, index)


class _Unpickler(pickle.Unpickler):
    """Unpickles a staged value, its tensor references resolved to ``buffers`` (None: each
    reference is checked and left as None, to read the generation first)."""

    def __init__(self, data, buffers):
        super().__init__(data)
        self._buffers = buffers

    def persistent_load(self, pid):
        kind, index = pid
        if kind != _TENSOR or (self._buffers is not None and not 0 <= index < len(self._buffers)):
            raise pickle.UnpicklingError(f"unknown tensor reference {pid!r}")
        return None if self._buffers is None else self._buffers[index]


def _peek_generation(source):
    """The generation a staged value was staged as; ``source`` is left where it was."""
    start = source.tell()
    generation, _ = _Unpickler(source, None).load()
    source.seek(start)
    return generation


class TensorSnapshot:
    """The committed copy of one value's tensors (how it works: the top of this file)."""

    def __init__(self, name, keep_previous=False):
        self._name = name
        self._keep_previous = keep_previous
        self._kept = {}  # generation -> its tensors in reference order: the current one, and
        # with keep_previous the one before it
        self._generation = 0  # the current generation: the last installed or loaded
        self._last = 0  # the newest generation staged so far
        self._staged = None  # (generation, live tensors, buffers) between stage and install

    @property
    def _buffers(self):
        return self._kept.get(self._generation, [])

    def nbytes(self):
        """Bytes held by the kept snapshots' buffers."""
        return sum(b.numel() * b.element_size() for kept in self._kept.values() for b in kept)

    def stage(self, value):
        """The bytes the C++ State keeps for ``value``; its tensors are copied at ``install``."""
        live = []
        out = io.BytesIO()
        out.write(_MAGIC)
        _Pickler(out, live).dump((self._last + 1, value))
        # Buffers the install will not keep are reused: with keep_previous, all but the current
        # generation's (which becomes the previous one).
        spare = collections.defaultdict(collections.deque)
        for generation, kept in self._kept.items():
            if self._keep_previous and generation == self._generation:
                continue
            for buffer in kept:
                spare[_signature(buffer)].append(buffer)
        buffers = []
        for tensor in live:
            fits = spare.get(_signature(tensor))
            buffers.append(fits.popleft() if fits else
                           torch.empty_like(tensor, memory_format=torch.preserve_format,
                                            requires_grad=False))
        self._staged = (self._last + 1, live, buffers)
        return out.getvalue()

    def install(self):
        """The commit succeeded on every rank: copies the staged tensors in."""
        if self._staged is None:
            raise RuntimeError(f"TorchState: {self._name} was committed but never staged")
        generation, live, buffers = self._staged
        self._staged = None
        with torch.no_grad():
            for tensor, buffer in zip(live, buffers):
                buffer.copy_(tensor)
        previous = self._generation
        self._kept = {g: b for g, b in self._kept.items()
                      if self._keep_previous and g == previous}
        self._kept[generation] = buffers
        self._generation = self._last = generation

    def discard(self):
        """The commit failed: the last snapshot stays."""
        self._staged = None

    def load(self, data):
        """The value committed as ``data``, its tensors being the snapshot buffers."""
        source = io.BytesIO(data)
        source.seek(len(_MAGIC))
        generation = _peek_generation(source)
        if generation not in self._kept:
            held = ", ".join(map(str, sorted(self._kept))) or "none"
            raise ValueError(f"the committed {self._name} is snapshot {generation}, but the "
                             f"buffers hold snapshot {held}")
        generation, value = _Unpickler(source, self._kept[generation]).load()
        self._generation = generation
        return value


def restore_module(module, saved):
    """``module.load_state_dict(saved)``: copies each tensor into the module's own (in place)."""
    module.load_state_dict(saved)


def _restored(live, saved):
    """A state value as committed: copied into the live tensor where it fits, else a new one."""
    if isinstance(saved, torch.Tensor):
        if isinstance(live, torch.Tensor) and _signature(live) == _signature(saved):
            live.copy_(saved)
            return live
        return saved.clone()
    return copy.deepcopy(saved)  # containers, numbers; a tensor inside is cloned


def _load_hooks(optimizer, kind):
    """The optimizer's load_state_dict hooks of ``kind`` ("pre" or "post"), in the order torch runs
    them; none before torch 2.0, which has no ``register_load_state_dict_{pre,post}_hook``."""
    return list(getattr(optimizer, f"_optimizer_load_state_dict_{kind}_hooks", {}).values())


def _pre_hooked(optimizer, saved):
    """``saved`` after the optimizer's load_state_dict pre-hooks, as ``load_state_dict`` gives it
    to them: a shallow copy each may change or replace. Its tensors are the snapshot buffers: a
    hook may replace them but must not change them in place."""
    saved = saved.copy()
    for hook in _load_hooks(optimizer, "pre"):
        result = hook(optimizer, saved)
        if result is not None:
            saved = result
    return saved


def _restored_group(group, saved_group):
    """A param group as committed, with the live group's parameters (and, as torch keeps them,
    its ``param_names`` where the committed group has none)."""
    restored = {k: copy.deepcopy(v) for k, v in saved_group.items() if k != "params"}
    restored["params"] = group["params"]
    if "param_names" in group and "param_names" not in saved_group:
        restored["param_names"] = group["param_names"]
    return restored


def restore_optimizer(optimizer, saved):
    """``optimizer.load_state_dict(saved)`` without its deep copy of every tensor: the state's
    tensors are copied into the optimizer's current ones where dtype, device, shape and strides
    match (new ones otherwise), state created after the commit is dropped, and the param groups'
    hyperparameters are the committed ones. Parameters pair by position, as in torch. The
    optimizer's load_state_dict pre- and post-hooks (torch >= 2.0) run as load_state_dict runs
    them."""
    saved = _pre_hooked(optimizer, saved)
    groups = optimizer.param_groups
    saved_groups = saved["param_groups"]
    if len(saved_groups) != len(groups) or any(
            len(s["params"]) != len(g["params"]) for s, g in zip(saved_groups, groups)):
        raise ValueError("the saved optimizer state has other param groups than this one")
    id_map = dict(zip((i for g in saved_groups for i in g["params"]),
                      (p for g in groups for p in g["params"])))
    state = collections.defaultdict(dict)
    with torch.no_grad():
        for key, entry in saved["state"].items():
            param = id_map.get(key)
            if param is None:
                state[key] = copy.deepcopy(entry)
                continue
            live = optimizer.state.get(param, {})
            state[param] = {name: _restored(live.get(name), value) for name, value in entry.items()}
    param_groups = [_restored_group(g, s) for g, s in zip(groups, saved_groups)]
    optimizer.__setstate__({"state": state, "param_groups": param_groups})
    for hook in _load_hooks(optimizer, "post"):
        hook(optimizer)
