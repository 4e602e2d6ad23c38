"""lmcache_conformance: the Python side of the LMCache conformance kit.

The value types and interfaces a Python serde or processor written for LMCache receives, with
LMCache's names and signatures, so that `lmcache-conform --python MODULE:FACTORY` runs the kit's
property suites over it with at most its imports changed (conformance/README.md, "Testing a
Python implementation"; docs/python.md lists every mirrored name).
"""

from .api import MemoryLayoutDesc, ObjectKey
from .bitmap import Bitmap
from .claims import declare
from .dtypes import FLOAT8_E4M3FN, FLOAT8_E5M2, dtype_name
from .event_notifier import EventNotifier
from .l2_adapter import AdapterUsage, L2AdapterInterface, L2AdapterListener, L2StoreResult, L2TaskId
from .memory_obj import MemoryObj, allocate
from .serde import AsyncSerdeProcessor, Deserializer, SerdeProcessor, SerdeTaskId, Serializer

__all__ = [
    "AdapterUsage",
    "AsyncSerdeProcessor",
    "Bitmap",
    "Deserializer",
    "EventNotifier",
    "FLOAT8_E4M3FN",
    "FLOAT8_E5M2",
    "L2AdapterInterface",
    "L2AdapterListener",
    "L2StoreResult",
    "L2TaskId",
    "MemoryLayoutDesc",
    "MemoryObj",
    "ObjectKey",
    "SerdeProcessor",
    "SerdeTaskId",
    "Serializer",
    "allocate",
    "declare",
    "dtype_name",
]
