"""The Reporting API's JSON answers: orjson's speed with the exact bytes Quart's default provider wrote.

Quart (Flask's provider) answers ``json.dumps(obj, sort_keys=True, ensure_ascii=True,
separators=(",", ":"))`` and a newline. Clients and the tests compare those bytes, so the faster
encoder keeps them, and steps aside wherever orjson would write something else:
- every character outside printable ASCII is written ``\\uXXXX`` (surrogate pairs past U+FFFF), as
  ``ensure_ascii`` does; orjson writes UTF-8 and leaves DEL as is;
- a float orjson may write in another form (``1e-07`` against ``1e-7``, ``1e+16`` against ``1e16``,
  ``1e-05`` against ``0.00001``) sends the whole answer to the standard encoder: such floats are rare
  in answers, and the scan for them may also pick a string that looks like one (it never misses one);
- whatever orjson refuses or would encode its own way (integers past 64 bits, datetimes, dataclasses,
  subclasses of the builtins, lone surrogates, non-string keys, deep nesting) goes to the standard
  encoder with the provider's own ``default``.
The one difference left: a non-finite float becomes ``null`` where ``json`` wrote ``NaN``, which is not
JSON; no stored document holds one (PostgreSQL's jsonb and the ingest check refuse them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson
from flask.json.provider import DefaultJSONProvider
from quart import Response
from werkzeug.sansio.response import Response as SansioResponse

_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_BEYOND_ASCII = re.compile("[\x7f-\U0010ffff]")


def _mask_table() -> bytes:
    table = bytearray(b" " * 256)
    for char in b"0123456789-+":
        table[char] = ord("0")
    table[ord("e")] = table[ord("E")] = ord("e")
    for char in b",]}":
        table[char] = ord("|")
    return bytes(table)


# Digits (and signs) as 0, an exponent mark as e, what ends a number as |, everything else a space: a
# number in exponent form ends in "e0|" to "e0000|". A string ends in a quote, so none matches unless its
# text holds such a run followed by one of ,]} ("1e5,"): those answers go to the standard encoder too.
_MASK = _mask_table()
_EXPONENT_END = re.compile(rb"e0{1,4}\|")
# Between 1e-5 and 1e-4 orjson writes 0.0000ddd where repr writes an exponent.
_SMALL = b"0.0000"
_SMALL_STARTS = re.compile(rb"[-:,\[]0\.0000")


def _refuse(value: Any) -> Any:
    raise TypeError(f"left to the standard encoder: {type(value).__name__}")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def _floats_may_differ(out: bytes) -> bool:
    """Whether repr may write a float of orjson's ``out`` otherwise (never a false no); C-speed scans."""
    if out[:1] not in (b"[", b"{"):
        # A bare scalar: the scans find a number by what stands before and after it.
        out = b"[" + out + b"]"
    if _SMALL in out and _SMALL_STARTS.search(out):
        return True
    return _EXPONENT_END.search(out.translate(_MASK)) is not None


@dataclass(frozen=True, slots=True)
class NumbersChecked:
    """An answer whose maker checked its numbers (``Page.numbers_plain``): orjson writes each as
    ``json.dumps`` does, so its encoding skips the scan of the written bytes for floats."""

    value: Any


def fast_json(value: Any, *, numbers_checked: bool = False) -> bytes | None:
    """``value`` as ``json.dumps(sort_keys, ensure_ascii, compact)`` writes it, or None to use json."""
    try:
        out = orjson.dumps(value, default=_refuse, option=_OPTIONS)
    except TypeError:
        return None
    if not numbers_checked and _floats_may_differ(out):
        return None
    if not out.isascii() or b"\x7f" in out:
        out = _BEYOND_ASCII.sub(_escape, out.decode()).encode("ascii")
    return out


class FastJSONProvider(DefaultJSONProvider):
    """Quart's default provider, with answers encoded by ``fast_json`` when it can."""

    def response(self, *args: Any, **kwargs: Any) -> SansioResponse:
        obj = self._prepare_response_obj(args, kwargs)
        if not self._app.debug and self.compact is not False:
            return Response(self.answer(obj), mimetype=self.mimetype)
        return super().response(obj)

    def answer(self, obj: Any) -> bytes:
        """The body ``response`` answers for ``obj`` (outside debug mode), as bytes: the lean lane's too."""
        checked = isinstance(obj, NumbersChecked)
        if checked:
            obj = obj.value
        out = fast_json(obj, numbers_checked=checked)
        if out is not None:
            return out + b"\n"
        return f"{self.dumps(obj, separators=(',', ':'))}\n".encode()
