"""``plain``: whether a value is built only of JSON-ready Python values (for ``as_dict`` tests)."""
from __future__ import annotations

import math


def plain(obj) -> bool:
    """True when ``obj`` is built only of JSON-ready Python values (no numpy scalars, no tuples)."""
    if obj is None or type(obj) in (bool, int, float, str):
        return not (type(obj) is float and math.isnan(obj))
    if type(obj) is list:
        return all(plain(v) for v in obj)
    if type(obj) is dict:
        return all(type(k) is str and plain(v) for k, v in obj.items())
    return False
