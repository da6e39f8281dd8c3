"""What JAX programs read off an array's placement: Array.sharding and Array.addressable_shards.

secant places an array on one device (jit, device_put) or splits it over devices along one axis
(pmap outputs); these objects describe exactly that, with JAX's attribute names."""
import numpy as np


class SingleDeviceSharding:
    """The whole array on one device (jax.sharding.SingleDeviceSharding)."""
    is_fully_replicated = True
    is_fully_addressable = True
    memory_kind = None
    num_devices = 1

    def __init__(self, device):
        self._device = device

    @property
    def device_set(self):
        return {self._device}

    addressable_devices = device_set

    @property
    def _device_assignment(self):
        return (self._device,)

    def devices_indices_map(self, global_shape):
        return {self._device: (slice(None),) * len(global_shape)}

    def shard_shape(self, global_shape):
        return tuple(global_shape)

    def __eq__(self, other):
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self):
        return hash(("single", self._device))

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"


class PmapSharding:
    """An array split along `axis`, one slice per device, in device order (a pmap output)."""
    is_fully_replicated = False
    is_fully_addressable = True
    memory_kind = None

    def __init__(self, devices, axis=0):
        self.devices = tuple(devices)
        self.axis = axis

    num_devices = property(lambda self: len(self.devices))
    device_set = property(lambda self: set(self.devices))
    addressable_devices = device_set
    _device_assignment = property(lambda self: self.devices)

    def devices_indices_map(self, global_shape):
        head = (slice(None),) * self.axis
        return {d: head + (k,) for k, d in enumerate(self.devices)}

    def shard_shape(self, global_shape):
        return tuple(s for i, s in enumerate(global_shape) if i != self.axis)

    def __eq__(self, other):
        return isinstance(other, PmapSharding) and (other.devices, other.axis) == (
            self.devices, self.axis)

    def __hash__(self):
        return hash(("pmap", self.devices, self.axis))

    def __repr__(self):
        return f"PmapSharding(devices={list(self.devices)!r}, axis={self.axis})"


class Shard:
    """One device's part of an array (jax.Shard): .device, .index into the whole array,
    .replica_id and .data (a single-device Array); it also reads as that data (shape, dtype,
    devices(), NumPy conversion)."""
    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, index, data, replica_id=0):
        self.device, self.index, self.data, self.replica_id = device, index, data, replica_id

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)

    def devices(self):
        return self.data.devices()

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.data, dtype=dtype)

    def __repr__(self):
        return (f"Shard(device={self.device!r}, index={self.index}, replica_id="
                f"{self.replica_id}, data={self.data!r})")
