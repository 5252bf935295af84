"""How a memory's vector is kept in its hash: float16 (half the bytes, `StoreSettings.vector_datatype`) or
float32, the index's vector field declared with the same type. Read back as float32 whatever it was written as,
the type told by the blob's length (two or four bytes per dimension), so a store part reading a vector needs
only the dimensions, and a keyspace half-way through its migration (store/redis/vector_migration.py) reads right."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

VectorDatatype = Literal["float16", "float32"]

_NUMPY_TYPES: dict[str, type[np.floating]] = {"float16": np.float16, "float32": np.float32}


def vector_bytes(vector: Sequence[float] | np.ndarray, datatype: VectorDatatype) -> bytes:
    """The bytes of `vector` as the index's vector field of type `datatype` reads them."""
    return np.asarray(vector, dtype=_NUMPY_TYPES[datatype]).tobytes()


def stored_vector(blob: bytes, dims: int) -> np.ndarray:
    """A stored vector (float16 or float32 bytes of `dims` dimensions) as float32."""
    if len(blob) == 2 * dims:
        return np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    return np.frombuffer(blob, dtype=np.float32)


def converted(blob: bytes, dims: int, datatype: VectorDatatype) -> bytes:
    """A stored vector's bytes in `datatype` (unchanged when they are in it already)."""
    if len(blob) == (2 if datatype == "float16" else 4) * dims:
        return blob
    return vector_bytes(stored_vector(blob, dims), datatype)
