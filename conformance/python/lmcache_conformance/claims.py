"""declare(): what a Python implementation claims, for the kit to judge it by.

    @lmcache_conformance.declare(mirrors={"type": "fp8", "fp8_dtype": "float8_e4m3fn"})
    def make_fp8():
        return Fp8Serializer(), Fp8Deserializer()

Every key is optional (docs/python.md lists them). `mirrors` names the reference serde config
the implementation must match byte for byte (MatchesReference); for a type the kit knows
("fp8", "checksum", "lmcr") it also supplies that type's dtypes, bounds and integrity claims,
which the other keys override.
"""

from __future__ import annotations

from typing import Any, Callable

_KEYS = {
    "name",
    "mirrors",
    "input_dtypes",
    "lossless",
    "bounds",
    "max_abs_input",
    "preserves_nan",
    "preserves_inf",
    "integrity",
    "randomized",
    "async_workers",
    # adapters (AdapterCapabilities, docs/python.md)
    "supports_delete",
    "supports_listeners",
    "reports_usage",
    "reports_lock_count",
    "object_dtypes",
}

ATTRIBUTE = "__lmcache_conformance__"


def declare(**claims: Any) -> Callable:
    unknown = sorted(set(claims) - _KEYS)
    if unknown:
        raise TypeError(f"declare(): unknown claim(s) {unknown}; known: {sorted(_KEYS)}")

    def mark(factory: Callable) -> Callable:
        setattr(factory, ATTRIBUTE, dict(claims))
        return factory

    return mark
