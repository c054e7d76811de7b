"""Text-format GraphDefs (``.pbtxt``, ``tf.io.write_graph(..., as_text=True)``) re-encoded as protobuf
wire bytes, so one decoder (``nodes.py``) reads both forms.

The schema below covers what a graph holds (GraphDef, NodeDef, AttrValue and its lists, shapes, tensors,
function references, versions); a field outside it is an error naming the field, never skipped
silently. Grammar: ``name: value``, ``name { ... }`` (or ``name: {...}``, ``<...>``), ``name: [a, b]``,
strings in single or double quotes with C escapes (adjacent strings concatenate), enum names, ``#``
comments.
"""

from __future__ import annotations

import re
import struct

from ...errors import FormatError

MAX_DEPTH = 64  # real graphs nest ~5 deep (node > attr > value > tensor > shape > dim)
DTYPES = {"DT_INVALID": 0, "DT_FLOAT": 1, "DT_DOUBLE": 2, "DT_INT32": 3, "DT_UINT8": 4, "DT_INT16": 5, "DT_INT8": 6,
          "DT_STRING": 7, "DT_COMPLEX64": 8, "DT_INT64": 9, "DT_BOOL": 10, "DT_QINT8": 11, "DT_QUINT8": 12,
          "DT_QINT32": 13, "DT_BFLOAT16": 14, "DT_QINT16": 15, "DT_QUINT16": 16, "DT_UINT16": 17,
          "DT_COMPLEX128": 18, "DT_HALF": 19, "DT_RESOURCE": 20, "DT_VARIANT": 21, "DT_UINT32": 22, "DT_UINT64": 23}
DTYPES.update({f"{k}_REF": v + 100 for k, v in list(DTYPES.items()) if v})

# message -> field name -> (number, kind); kind is a scalar type or another message's name.
SCHEMA: dict[str, dict[str, tuple[int, str]]] = {
    "GraphDef": {"node": (1, "NodeDef"), "library": (2, "FunctionDefLibrary"), "version": (3, "int"),
                 "versions": (4, "VersionDef")},
    "VersionDef": {"producer": (1, "int"), "min_consumer": (2, "int"), "bad_consumers": (3, "int")},
    "FunctionDefLibrary": {},  # functions in a text graph: refused by name if present (not in frozen graphs)
    "NodeDef": {"name": (1, "str"), "op": (2, "str"), "input": (3, "str"), "device": (4, "str"),
                "attr": (5, "AttrEntry"), "experimental_debug_info": (6, "Ignored"),
                "experimental_type": (7, "Ignored")},  # debug info and full types: nothing a conversion reads
    "AttrEntry": {"key": (1, "str"), "value": (2, "AttrValue")},
    "AttrValue": {"list": (1, "ListValue"), "s": (2, "bytes"), "i": (3, "int"), "f": (4, "float"),
                  "b": (5, "bool"), "type": (6, "dtype"), "shape": (7, "TensorShapeProto"),
                  "tensor": (8, "TensorProto"), "placeholder": (9, "str"), "func": (10, "NameAttrList")},
    "ListValue": {"s": (2, "bytes"), "i": (3, "int"), "f": (4, "float"), "b": (5, "bool"), "type": (6, "dtype"),
                  "shape": (7, "TensorShapeProto"), "tensor": (8, "TensorProto"), "func": (9, "NameAttrList")},
    "NameAttrList": {"name": (1, "str"), "attr": (2, "AttrEntry")},
    "TensorShapeProto": {"dim": (2, "Dim"), "unknown_rank": (3, "bool")},
    "Dim": {"size": (1, "int"), "name": (2, "str")},
    "TensorProto": {"dtype": (1, "dtype"), "tensor_shape": (2, "TensorShapeProto"), "version_number": (3, "int"),
                    "tensor_content": (4, "bytes"), "float_val": (5, "float"), "double_val": (6, "double"),
                    "int_val": (7, "int"), "string_val": (8, "bytes"), "scomplex_val": (9, "float"),
                    "int64_val": (10, "int"), "bool_val": (11, "bool"), "dcomplex_val": (12, "double"),
                    "half_val": (13, "int"), "uint32_val": (16, "int"), "uint64_val": (17, "int")},
    "Ignored": {},
}
_TOKEN = re.compile(r"""\s+|\#[^\n]*|(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|(?P<punct>[{}<>\[\]:,;])"""
                    r"""|(?P<word>[-+]?[A-Za-z0-9_.+\-]+)""")
_ESCAPES = {"n": 10, "t": 9, "r": 13, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8, "f": 12, "v": 11, "?": 63}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: two's complement, ten bytes
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _unescape(text: str, where: str) -> bytes:
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in "xX" and re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:i + 4]):
            digits = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:i + 4]).group(0)  # type: ignore[union-attr]
            out.append(int(digits, 16))
            i += 2 + len(digits)
        elif nxt.isdigit():
            digits = re.match(r"[0-7]{1,3}", body[i + 1:i + 4])
            if digits is None:
                raise FormatError(f"{where}: bad escape in a string")
            out.append(int(digits.group(0), 8) & 0xFF)
            i += 1 + len(digits.group(0))
        else:
            raise FormatError(f"{where}: bad escape \\{nxt} in a string")
    return bytes(out)


class _Parser:
    def __init__(self, text: str, where: str) -> None:
        self.where = where
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                line = text.count("\n", 0, pos) + 1
                raise FormatError(f"{where}: line {line}: unexpected {text[pos:pos + 10]!r}; not a text GraphDef")
            pos = m.end()
            if m.lastgroup:
                self.tokens.append((m.lastgroup, m.group(m.lastgroup)))
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise FormatError(f"{self.where}: the text ends inside a message")
        self.i += 1
        return token

    def message(self, kind: str, end: str | None, depth: int) -> bytes:
        if depth > MAX_DEPTH:
            raise FormatError(f"{self.where}: messages nested more than {MAX_DEPTH} deep; the file is forged")
        out = bytearray()
        schema = SCHEMA[kind]
        while True:
            token = self.peek()
            if token is None or (token[0] == "punct" and token[1] in "}>"):
                if (token is None) != (end is None) or (token is not None and token[1] != end):
                    raise FormatError(f"{self.where}: unbalanced braces in {kind}")
                if token is not None:
                    self.i += 1
                return bytes(out)
            kind_, name = self.take()
            if kind_ != "word" or name not in schema:
                raise FormatError(f"{self.where}: {kind} has no field {name!r} tf2torch reads; is it a GraphDef?")
            number, ftype = schema[name]
            if self.peek() == ("punct", ":"):
                self.i += 1
            if self.peek() == ("punct", "["):
                self.i += 1
                while self.peek() != ("punct", "]"):
                    out += self.field(number, ftype, depth)
                    if self.peek() == ("punct", ","):
                        self.i += 1
                self.i += 1
            else:
                out += self.field(number, ftype, depth)
            if self.peek() in (("punct", ","), ("punct", ";")):
                self.i += 1

    def skip(self) -> None:
        """A message tf2torch does not read, skipped whole (its braces balanced)."""
        level = 0
        while True:
            kind, text = self.take()
            if kind == "punct" and text in "{<":
                level += 1
            elif kind == "punct" and text in "}>":
                level -= 1
                if level == 0:
                    return
            elif level == 0:
                raise FormatError(f"{self.where}: expected {{ after a message field, found {text!r}")
            if level > MAX_DEPTH:
                raise FormatError(f"{self.where}: messages nested more than {MAX_DEPTH} deep; the file is forged")

    def field(self, number: int, ftype: str, depth: int) -> bytes:
        if ftype == "Ignored":
            self.skip()
            return b""
        if ftype in SCHEMA:
            kind, opener = self.take()
            if kind != "punct" or opener not in "{<":
                raise FormatError(f"{self.where}: expected {{ after a message field, found {opener!r}")
            body = self.message(ftype, "}" if opener == "{" else ">", depth + 1)
            return _varint(number << 3 | 2) + _varint(len(body)) + body
        if ftype in ("str", "bytes"):
            parts = []
            while self.peek() is not None and self.peek()[0] == "str":  # type: ignore[index]
                parts.append(_unescape(self.take()[1], self.where))  # adjacent strings concatenate
            if not parts:
                raise FormatError(f"{self.where}: expected a quoted string, found {self.peek()!r}")
            data = b"".join(parts)
            return _varint(number << 3 | 2) + _varint(len(data)) + data
        kind, word = self.take()
        if kind != "word":
            raise FormatError(f"{self.where}: expected a value, found {word!r}")
        try:
            if ftype == "float":
                return _varint(number << 3 | 5) + struct.pack("<f", float(word.rstrip("fF")))
            if ftype == "double":
                return _varint(number << 3 | 1) + struct.pack("<d", float(word))
            if ftype == "bool":
                return _varint(number << 3) + _varint({"true": 1, "false": 0, "1": 1, "0": 0}[word])
            if ftype == "dtype":
                return _varint(number << 3) + _varint(DTYPES[word] if word in DTYPES else int(word))
            return _varint(number << 3) + _varint(int(word, 0))
        except (ValueError, KeyError, OverflowError):
            raise FormatError(f"{self.where}: {word!r} is not a {ftype}") from None


def text_to_binary(text: str, where: str) -> bytes:
    """A text-format GraphDef as the bytes of the same GraphDef in binary."""
    return _Parser(text, where).message("GraphDef", None, 0)
