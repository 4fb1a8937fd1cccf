"""Gradient compression for the collectives, with Horovod's interface.

A compressor turns a tensor into the tensor that travels (``compress``, which also returns the
context needed to undo it) and back (``decompress``). ``Compression.none`` sends tensors as they
are; ``Compression.fp16`` sends floating-point tensors as float16 (half the bytes) and gives them
back in their own dtype, leaving other dtypes alone.
"""

import torch


class Compressor:
    """The interface: ``compress(tensor) -> (tensor, ctx)``, ``decompress(tensor, ctx)``."""

    @staticmethod
    def compress(tensor):
        """Returns the tensor to send and what ``decompress`` needs to undo the change."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        """Returns the tensor in its original form."""
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors unchanged."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 and restores their dtype on receipt."""

    @staticmethod
    def compress(tensor):
        original = tensor.dtype
        if tensor.is_floating_point() and original != torch.float16:
            return tensor.to(torch.float16), original
        return tensor, original

    @staticmethod
    def decompress(tensor, ctx):
        if ctx is not None and tensor.dtype != ctx:
            return tensor.to(ctx)
        return tensor


class Compression:
    """The compressors, by name: ``Compression.none`` and ``Compression.fp16``."""

    none = NoneCompressor
    fp16 = FP16Compressor
