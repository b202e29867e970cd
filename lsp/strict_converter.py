"""The cattrs converter the server reads messages with: lsprotocol's, made strict.

lsprotocol's coerces (``"text": null`` to ``"None"``, ``"4"`` to 4); here such a message is
refused whole, naming the field. Every string read, ``inkling/*`` params included, has each lone
surrogate (not encodable as UTF-8) replaced with U+FFFD, one UTF-16 unit for one, so positions
still address the same text."""
from __future__ import annotations

import re
from typing import Any

import cattrs
from cattrs.errors import ClassValidationError
from lsprotocol.converters import get_converter
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage

_SURROGATE = re.compile("[\ud800-\udfff]")   # in a Python str, a surrogate is always lone
_SNAKE = re.compile(r"_([a-z])")


class FieldError(TypeError):
    """A JSON value of the wrong type; its message names what was expected and got."""


def clean_text(s: str) -> str:
    """``s`` with each lone surrogate replaced by U+FFFD (same length in UTF-16 units)."""
    return _SURROGATE.sub("\ufffd", s) if _SURROGATE.search(s) else s


def clean_json(value: Any) -> Any:
    """A JSON value with every string (keys too) passed through :func:`clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_json(v) for v in value]
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _strict_str(value: Any, _type) -> str:
    if not isinstance(value, str):
        raise FieldError(f"expected a string, got {_shown(value)}")
    return clean_text(value)


def _strict_int(value: Any, _type) -> int:
    if type(value) is not int:               # bool is an int subclass: refused too
        raise FieldError(f"expected an integer, got {_shown(value)}")
    return value


def _strict_float(value: Any, _type) -> float:
    if type(value) not in (int, float):
        raise FieldError(f"expected a number, got {_shown(value)}")
    return float(value)


def _strict_bool(value: Any, _type) -> bool:
    if type(value) is not bool:
        raise FieldError(f"expected true or false, got {_shown(value)}")
    return value


def _plain_params(obj: dict, cls):
    """A generic JSON-RPC message (a method lsprotocol has no type for): params as JSON."""
    if "params" in obj:
        obj["params"] = clean_json(obj["params"])
    return cls(**obj)


def strict_converter() -> cattrs.Converter:
    converter = get_converter()
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook(bool, _strict_bool)
    converter.register_structure_hook(JsonRPCRequestMessage, _plain_params)
    converter.register_structure_hook(JsonRPCNotification, _plain_params)
    return converter


def _camel(path: str) -> str:
    return _SNAKE.sub(lambda m: m.group(1).upper(), path)


def _format(exc: BaseException, type_) -> str:
    if isinstance(exc, FieldError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return cattrs.v.format_exception(exc, type_)


def describe(exc: BaseException) -> str:
    """One line naming each bad field, e.g. ``params.position.line: expected an integer``."""
    if isinstance(exc, ClassValidationError):
        lines = cattrs.transform_error(exc, path="$", format_exception=_format)
        parts = []
        for line in lines:
            what, _, where = line.rpartition(" @ ")
            where = _camel(where.removeprefix("$.").removeprefix("$"))
            parts.append(f"{where or 'message'}: {what}")
        return "; ".join(parts)
    return f"{type(exc).__name__}: {exc}"
