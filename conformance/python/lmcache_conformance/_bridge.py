"""What the kit's C++ side calls (lmcache-conform --python). Not part of the mirrored API."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import traceback
from typing import Any, Callable

from .api import MemoryLayoutDesc, ObjectKey
from .claims import ATTRIBUTE
from .dtypes import dtype_of
from .l2_adapter import L2AdapterListener
from .memory_obj import MemoryObj
from .serde import AsyncSerdeProcessor


def _load_module(module: str):
    if module.endswith(".py") or os.sep in module:
        path = os.path.abspath(module)
        if not os.path.isfile(path):
            raise ValueError(f"no Python file {path}")
        name = "lmcache_conformance_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        sys.path.insert(0, os.path.dirname(path))  # its own imports, as when run as a script
        spec.loader.exec_module(mod)
        return mod
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # as `python -m` finds modules of the working directory
    return importlib.import_module(module)


def load_factory(spec: str) -> Callable:
    module, sep, attr = spec.rpartition(":")
    if not sep or not module or not attr:
        raise ValueError(f"--python {spec!r}: expected MODULE:FACTORY or FILE.py:FACTORY")
    mod = _load_module(module)
    factory = mod
    for part in attr.split("."):
        if not hasattr(factory, part):
            raise ValueError(f"--python {spec!r}: {module} has no attribute {attr!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise ValueError(f"--python {spec!r}: {attr} is not callable")
    return factory


def kind_of(obj: Any) -> str:
    """serde (a (serializer, deserializer) pair or one object with both), processor or adapter."""
    if isinstance(obj, tuple) and len(obj) == 2:
        s, d = obj
        if callable(getattr(s, "serialize", None)) and callable(getattr(d, "deserialize", None)):
            return "serde"
    if callable(getattr(obj, "submit_serialize", None)):
        return "processor"
    if callable(getattr(obj, "submit_store_task", None)):
        return "adapter"
    if callable(getattr(obj, "serialize", None)) and callable(getattr(obj, "deserialize", None)):
        return "serde"
    raise ValueError(
        f"the factory returned {type(obj).__name__}: expected a (Serializer, Deserializer) pair, "
        "one object with serialize/deserialize/estimate_serialized_size, a SerdeProcessor "
        "(submit_serialize ...) or an L2 adapter (submit_store_task ...)"
    )


def split_pair(obj: Any):
    return obj if isinstance(obj, tuple) else (obj, obj)


def async_processor(factory: Callable, workers: int) -> AsyncSerdeProcessor:
    s, d = split_pair(factory())
    return AsyncSerdeProcessor(s, d, max_workers=workers)


def describe(spec: str, factory: Callable) -> str:
    """JSON: the implementation's kind, default name and claims."""
    made = factory()
    kind = kind_of(made)
    if kind != "serde" and callable(getattr(made, "close", None)):
        made.close()  # only looked at
    claims = dict(getattr(factory, ATTRIBUTE, {}))
    module, _, attr = spec.rpartition(":")
    base = os.path.splitext(os.path.basename(module))[0] if module.endswith(".py") else module.split(".")[-1]
    default = re.sub(r"\W", "_", f"py_{base}_{attr}")
    return json.dumps({"kind": kind, "name": claims.pop("name", default), "claims": claims,
                       "takes_capacity": takes_capacity(factory)})


def takes_capacity(factory: Callable) -> bool:
    """Whether the factory takes a `max_capacity_bytes` keyword (an adapter of that capacity)."""
    try:
        return "max_capacity_bytes" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return False


def made_with_capacity(factory: Callable, capacity: int):
    return factory(max_capacity_bytes=capacity)


def layout(shapes: list, dtype_names: list) -> MemoryLayoutDesc:
    return MemoryLayoutDesc(shapes, [dtype_of(n) for n in dtype_names])


def memory_obj(buffer, layout_desc: MemoryLayoutDesc, used_size: int, on_set_used_size) -> MemoryObj:
    return MemoryObj(buffer, layout_desc, used_size, on_set_used_size)


def object_key(chunk_hash: bytes, model_name: str, kv_rank: int, group: int, salt: str) -> ObjectKey:
    # The kit's keys passed its own (the same) checks: built without re-checking.
    key = object.__new__(ObjectKey)
    for field, value in (("chunk_hash", chunk_hash), ("model_name", model_name), ("kv_rank", kv_rank),
                         ("object_group_id", group), ("cache_salt", salt)):
        object.__setattr__(key, field, value)
    return key


def format_exception(exc: BaseException, trace=None, frames: int = 4) -> str:
    """The exception and the last `frames` frames of its traceback (`trace`, else its own)."""
    tb = traceback.extract_tb(trace if trace is not None else exc.__traceback__)[-frames:]
    where = "".join(traceback.format_list(tb)).rstrip()
    text = f"{type(exc).__name__}: {exc}"
    return f"{text}\n  Python traceback (last {len(tb)} frames):\n{where}" if where else text


@L2AdapterListener.register
class _Listener:
    """An L2AdapterListener over the kit's three callbacks."""

    def __init__(self, stored, accessed, deleted) -> None:
        self.on_l2_keys_stored = stored
        self.on_l2_keys_accessed = accessed
        self.on_l2_keys_deleted = deleted


def listener(stored, accessed, deleted) -> _Listener:
    return _Listener(stored, accessed, deleted)


def to_json(value) -> str:
    return json.dumps(value, default=str)
