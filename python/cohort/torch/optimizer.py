"""DistributedOptimizer: any torch optimizer whose step() first combines the gradients of all ranks.

As in Horovod, ``DistributedOptimizer(opt, ...)`` returns an instance of a class made on the fly
that derives from ``type(opt)`` (so ``isinstance`` checks and the optimizer's own methods keep
working) and shares ``opt``'s parameters, hyperparameters and state. Unlike Horovod it sends all
gradients in ONE grouped allreduce per step by default, its members ordered by parameter name:
the order in which autograd produced the gradients, which may differ between ranks, does not
matter. Hooks on the gradient accumulators count backward passes, to refuse more than
``backward_passes_per_step`` of them before a step; with ``num_groups`` or ``groups`` they also
send each group, named by its index, as soon as all its gradients are ready, so that the
allreduces overlap the rest of the backward pass.
"""

import contextlib
import itertools
import warnings

import torch

from cohort.torch import mpi_ops
from cohort.torch.compression import Compression
from cohort.torch.mpi_ops import Average, global_process_set

# Each DistributedOptimizer's grouped allreduce gets its own name; optimizers are created in the
# same order on every rank, as Horovod also requires.
_optimizer_counter = itertools.count()


class _DistributedOptimizer:
    """The methods mixed in front of the wrapped optimizer's class."""

    def _cohort_setup(self, named_parameters, compression, backward_passes_per_step, op,
                      gradient_predivide_factor, num_groups, groups, sparse_as_dense,
                      process_set):
        mpi_ops._check_op(op)
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("gradient_predivide_factor not supported with op != Average")
        if backward_passes_per_step < 1:
            raise ValueError("backward_passes_per_step must be at least 1")
        in_groups = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            names = [name for name, _ in named]
            if len(set(names)) != len(names):
                raise ValueError("Parameter names in named_parameters must be unique.")
            known = {id(p) for _, p in named}
            if any(id(p) not in known for p in in_groups):
                raise ValueError("named_parameters was specified, but one or more model "
                                 "parameters were not named. Python object ids: "
                                 f"{', '.join(str(id(p)) for p in in_groups if id(p) not in known)}")
            wanted = {id(p) for p in in_groups}
            named = [(n, p) for n, p in named if id(p) in wanted]
        else:
            named = [(f"noname.{i:06d}", p) for i, p in enumerate(in_groups)]
        # Name order makes the group's member order the same on every rank.
        self._cohort_params = sorted(((n, p) for n, p in named if p.requires_grad),
                                     key=lambda item: item[0])
        # Horovod's attribute of the same name (parameter -> name), which its tests read.
        self._parameter_names = {p: n for n, p in named}
        self._cohort_compression = compression
        self._cohort_passes_per_step = backward_passes_per_step
        self._cohort_op = op
        self._cohort_prescale = 1.0
        self._cohort_postscale = 1.0
        if op == Average:
            # The runtime divides by the size after the sum; the predivide factor is split so that
            # float16 sums stay in range.
            self._cohort_prescale = 1.0 / gradient_predivide_factor
            self._cohort_postscale = gradient_predivide_factor
        self._cohort_sparse_as_dense = sparse_as_dense
        self._cohort_process_set = process_set
        self._cohort_name = f"DistributedOptimizer.{next(_optimizer_counter)}"
        self._cohort_groups = self._cohort_make_groups(num_groups, groups)
        self._cohort_group_of = {name: g for g, members in enumerate(self._cohort_groups)
                                 for name, _ in members}
        # Explicit groups are sent from the hooks as soon as they are complete, overlapping the
        # rest of the backward pass; the single default group waits for synchronize().
        self._cohort_overlap = num_groups > 0 or groups is not None
        # group index -> (handle or None, dense gradients, compressed tensors,
        #                 [(p, sparse handle)], [p made dense by sparse_as_dense])
        self._cohort_in_flight = {}
        self._cohort_passes = {}
        self._cohort_synchronized = False
        self._cohort_should_synchronize = True
        self._cohort_accumulators = []
        # As Horovod: on a rank outside the process set the optimizer is the wrapped one alone.
        self._cohort_member = process_set.included()
        if self._cohort_member:
            self._cohort_register_hooks()

    def _cohort_make_groups(self, num_groups, groups):
        """The gradient groups, as lists of (name, parameter) in name order: one group of every
        parameter by default; ``num_groups`` contiguous runs of the name-ordered parameters (as
        equal in count as possible); or the caller's ``groups`` (lists of parameters), with every
        parameter they leave out in one more group."""
        params = self._cohort_params
        if groups is not None:
            if num_groups:
                raise ValueError("DistributedOptimizer: give num_groups or groups, not both")
            name_of = {id(p): n for n, p in params}
            listed = [[(name_of[id(p)], p) for p in group if id(p) in name_of]
                      for group in groups]
            seen = {n for group in listed for n, _ in group}
            if sum(len(group) for group in listed) != len(seen):
                raise ValueError("DistributedOptimizer: a parameter is in two groups")
            rest = [(n, p) for n, p in params if n not in seen]
            chosen = [sorted(group, key=lambda item: item[0]) for group in listed] + [rest]
        elif num_groups < 0:
            raise ValueError("DistributedOptimizer: num_groups must be 0 or more")
        elif num_groups > 0:
            k = min(num_groups, len(params))
            chosen = [params[len(params) * i // k:len(params) * (i + 1) // k] for i in range(k)]
        else:
            chosen = [params]
        return [group for group in chosen if group]

    def _cohort_group_name(self, index):
        if len(self._cohort_groups) == 1:
            return self._cohort_name
        return f"{self._cohort_name}.group{index}"

    def _cohort_submit(self, index):
        """Starts the grouped allreduce of one group's dense gradients (zeros for a missing one),
        and, as Horovod, a sparse allreduce (allgathers of indices and values) of each sparse one
        unless ``sparse_as_dense`` (then it is allreduced dense and made sparse again after)."""
        grads, sparse, resparse = [], [], []
        for name, p in self._cohort_groups[index]:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            elif p.grad.is_sparse and self._cohort_sparse_as_dense:
                p.grad = p.grad.to_dense()
                resparse.append(p)
            if p.grad.is_sparse:
                sparse.append((p, mpi_ops.sparse_allreduce_async(
                    p.grad, f"{self._cohort_name}.sparse.{name}", self._cohort_op,
                    self._cohort_process_set)))
            else:
                grads.append(p.grad)
        compressed = [self._cohort_compression.compress(g) for g in grads]
        handle = None
        if grads:
            handle = mpi_ops.grouped_allreduce_async_(
                [c for c, _ in compressed], name=self._cohort_group_name(index),
                op=self._cohort_op, prescale_factor=self._cohort_prescale,
                postscale_factor=self._cohort_postscale, process_set=self._cohort_process_set)
        self._cohort_in_flight[index] = (handle, grads, compressed, sparse, resparse)

    def _cohort_group_ready(self, name):
        """Called when a parameter has had all its backward passes: with explicit groups, its
        group is sent once all its members have."""
        index = self._cohort_group_of.get(name)
        if not self._cohort_overlap or index is None or index in self._cohort_in_flight:
            return
        wanted = self._cohort_passes_per_step
        if all(self._cohort_passes.get(n, 0) == wanted for n, _ in self._cohort_groups[index]):
            self._cohort_submit(index)

    def _cohort_register_hooks(self):
        with torch.enable_grad():
            self._cohort_hook_accumulators()

    def _cohort_hook_accumulators(self):
        for name, p in self._cohort_params:
            # The AccumulateGrad node of a leaf is reached through a view of it; it runs once per
            # backward pass that reaches the parameter.
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._cohort_make_hook(name))
            self._cohort_accumulators.append(accumulator)

    def _cohort_make_hook(self, name):
        def hook(*_):
            passes = self._cohort_passes.get(name, 0) + 1
            if passes > self._cohort_passes_per_step:
                raise AssertionError(
                    "Gradients were computed more than backward_passes_per_step times before call "
                    "to step(). Increase backward_passes_per_step to accumulate gradients locally.")
            self._cohort_passes[name] = passes
            if passes == self._cohort_passes_per_step:
                self._cohort_group_ready(name)
        return hook

    def synchronize(self):
        """Combines every parameter's gradient across the ranks now, in one grouped allreduce.

        A parameter with no gradient on this rank (unused in this step) contributes zeros, so no
        rank waits for it. A later ``step()`` does not repeat the allreduce.
        """
        if self._cohort_synchronized or not self._cohort_member:
            self._cohort_synchronized = True
            return
        try:
            for index in range(len(self._cohort_groups)):
                if index not in self._cohort_in_flight:
                    self._cohort_submit(index)
            for index in sorted(self._cohort_in_flight):
                handle, grads, compressed, sparse, resparse = self._cohort_in_flight[index]
                for p, sparse_handle in sparse:
                    p.grad = mpi_ops.synchronize(sparse_handle)
                if handle is None:
                    continue
                mpi_ops.synchronize(handle)
                with torch.no_grad():
                    for grad, (tensor, ctx) in zip(grads, compressed):
                        if tensor is not grad:
                            grad.copy_(self._cohort_compression.decompress(tensor, ctx))
                for p in resparse:  # as Horovod: the optimizer gets the sparse gradient it made
                    p.grad = p.grad.to_sparse()
        finally:
            self._cohort_in_flight.clear()
        self._cohort_passes.clear()
        self._cohort_synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """Inside it, ``step()`` does not allreduce (call ``synchronize()`` first, e.g. to clip)."""
        self._cohort_should_synchronize = False
        try:
            yield
        finally:
            self._cohort_should_synchronize = True

    def step(self, closure=None):
        """Allreduces the gradients (unless done already or skipped), then the optimizer's step."""
        if self._cohort_should_synchronize:
            if self._cohort_synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(); the gradients are not "
                              "reduced a second time.")
            self.synchronize()
        self._cohort_synchronized = False
        return super().step(closure)

    @staticmethod
    def _cohort_done(in_flight):
        """Whether a group's grouped allreduce and sparse allreduces have all completed."""
        handle, _, _, sparse, _ = in_flight
        handles = ([] if handle is None else [handle]) + [h for _, h in sparse]
        return all(mpi_ops.poll(h) for h in handles)

    def zero_grad(self, set_to_none=False):
        """The wrapped optimizer's zero_grad; also forgets the backward passes counted."""
        # Groups that finished are dropped: after a failure the old runtime failed every pending
        # one, and elastic.run's retry starts with zero_grad(). One still running is refused, as
        # in Horovod: it would write into the gradients being cleared.
        running = {i: f for i, f in self._cohort_in_flight.items() if not self._cohort_done(f)}
        self._cohort_in_flight.clear()
        if running:
            self._cohort_in_flight.update(running)
            raise AssertionError(
                "optimizer.zero_grad() was called after loss.backward() but before "
                "optimizer.step() or optimizer.synchronize(): gradient groups are being "
                "allreduced into the gradients it would clear")
        self._cohort_passes.clear()
        self._cohort_synchronized = False
        return super().zero_grad(set_to_none=set_to_none)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps ``optimizer`` so that ``step()`` first combines the gradients of all ranks.

    ``named_parameters``: ``model.named_parameters()``, to name the parameters (otherwise they are
    named by position in the param groups). ``op``: Average (default), Sum, Min, Max or Product.
    ``backward_passes_per_step``: backward passes accumulated locally before each step; more are
    refused. ``gradient_predivide_factor``: for Average, divide by it before the sum and multiply
    by it / size after. By default every step sends all gradients as ONE grouped allreduce, at
    ``step()`` (or ``synchronize()``). ``num_groups`` (the name-ordered parameters split into that
    many runs) or ``groups`` (lists of parameters) make several groups instead, each sent from the
    backward hooks as soon as all its gradients are ready, so communication overlaps the rest of
    the backward pass, as DistributedDataParallel's buckets do.
    """
    base = optimizer.__class__
    cls = type(base.__name__, (_DistributedOptimizer, base), {})
    wrapped = cls.__new__(cls)
    # Shares the wrapped optimizer's param groups, state and hyperparameters.
    wrapped.__dict__.update(optimizer.__dict__)
    wrapped._cohort_setup(named_parameters, compression, backward_passes_per_step, op,
                          gradient_predivide_factor, num_groups, groups, sparse_as_dense,
                          process_set)
    return wrapped
