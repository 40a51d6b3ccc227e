"""The display filter of `-Y` (as in tshark): which messages to show.

    type == Delta and output == vwap and key == "AAPL" and sequence_no > 100

`compile_filter` parses the text once into a tree of closures; calling the
resulting `DisplayFilter` with an `Origin` and a message evaluates it,
reading only the fields the expression names, straight from the frame, the
payload and the decoded Delta (nothing is rendered except a key's text when
a key is compared as text).

Grammar (precedence from loosest to tightest):

    expr    := and ( ('or' | '||') and )*
    and     := unary ( ('and' | '&&') unary )*
    unary   := ('not' | '!') unary | '(' expr ')' | test
    test    := FIELD
             | FIELD ('==' | '!=' | '<' | '<=' | '>' | '>=') VALUE
             | FIELD 'contains' VALUE
             | FIELD ('matches' | '~') VALUE
             | FIELD ['not'] 'in' '{' VALUE ( [','] VALUE )* '}'
    VALUE   := "string" | r"raw string" | number | true | false | bare word

A test on a field the message does not have is false, whatever the
operator (`!=` and `not in` included); `not` turns it true.  The full
description, for ripple-decode(1), is in man/filter.txt.
"""

from __future__ import annotations

import difflib
import math
import operator
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ripple_cli.errors import UsageProblem
from ripple_cli.protocols import registry
from ripple_cli.protocols.base import ANYTHING, UNKNOWN, Dissector, Prefilter
from ripple_cli.protocols.item import Decoded
from ripple_cli.protocols.origin import Origin
from ripple_cli.protocols.registry import PROTOCOLS as PROTOCOL_NAMES
from ripple_cli.sexp.atoms import escape_text

# A message is any protocol's (Decoded); Any here, because each protocol's
# getters take their own message class.
Predicate = Callable[[Origin, Any], bool]
Getter = Callable[[Origin, Any], Any]
Test = Callable[[Any], bool]


class FilterError(UsageProblem):
    """A filter that does not compile.  `column` is 1-based and points at the
    offending token (one past the end when the text ends too early);
    `reason` is the message without the column; str(e) is
    `column 17: expected a value after '=='`."""

    def __init__(self, message: str, column: int) -> None:
        message = escape_text(message)  # one line, whatever token it quotes (a newline in a string, say)
        super().__init__(f"column {column}: {message}")
        self.reason = message
        self.column = column


class DisplayFilter:
    """A compiled filter: call it with (origin, message) to get a bool.

    The text is checked once against every protocol's fields, then compiled
    for each protocol on its first message, with the getters its dissector
    gives (`Dissector.getter`: Ripple's read the frame and payload
    directly, the sibling protocols' look names up in their JSON view)."""

    __slots__ = ("_by_protocol", "fields", "prefilter", "text")

    def __init__(self, text: str, fields: frozenset[str], prefilter: Prefilter = ANYTHING) -> None:
        self.text = text
        self._by_protocol: dict[str, Predicate] = {}
        self.fields = fields  # the field names used, as written (`field.stats.high`)
        self.prefilter = prefilter  # what a message must be to pass: type, output and key tests

    def __call__(self, origin: Origin, msg: Decoded) -> bool:
        try:
            predicate = self._by_protocol[msg.protocol]
        except KeyError:
            dissector = registry.get(msg.protocol)
            predicate = self._by_protocol[msg.protocol] = _Parser(self.text, dissector).parse()
        return predicate(origin, msg)

    @property
    def needs_decoded_deltas(self) -> bool:
        """True when the result can depend on a Delta's decoded key or row
        (`key`, `field.*`): decoding Deltas with their schemas matters."""
        return any(f == "key" or f.startswith("field.") for f in self.fields)

    def __repr__(self) -> str:
        return f"DisplayFilter({self.text!r})"


def compile_filter(text: str) -> DisplayFilter:
    """Parse `text`; raises `FilterError` with the column of the problem."""
    parser = _Parser(text)
    parser.parse()
    return DisplayFilter(text, frozenset(parser.fields), parser.hint)


# ------------------------------------------------------------------ fields

# The kinds of value a field can have, for compile-time checks and for
# choosing a comparison without per-message type dispatch.
_NUM = "num"  # int or float
_BYTES = "bytes"  # wire bytes, compared as UTF-8 text
_STR = "str"
_BOOL = "bool"
_LIST = "list"  # a sequence of byte strings (errors)
_KEY = "key"  # the Delta key: its text, or its number
_ANY = "any"  # a row field: anything a schema allows

_WHAT = {
    _NUM: "a number",
    _BYTES: "text",
    _STR: "text",
    _BOOL: "true or false",
    _LIST: "a list",
}


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kind: str
    get: Getter
    choices: tuple[str, ...] = ()  # the only values ==, != and in accept
    choice_what: str = ""


def _g_connection(o: Origin, m: Any) -> Any:
    s = o.stream
    return None if s is None else s.connection


def _g_direction(o: Origin, m: Any) -> Any:
    s = o.stream
    return None if s is None else s.direction


def _g_src(o: Origin, m: Any) -> Any:
    s = o.stream
    if s is None:
        return None
    return str(s.client if s.from_client else s.server)


def _g_dst(o: Origin, m: Any) -> Any:
    s = o.stream
    if s is None:
        return None
    return str(s.server if s.from_client else s.client)


def _g_capture_time_ns(o: Origin, m: Any) -> Any:
    return o.time_ns


def _g_community_id(o: Origin, m: Any) -> Any:
    return o.community_id


def _g_protocol(o: Origin, m: Any) -> Any:
    return m.protocol


def _g_type(o: Origin, m: Any) -> Any:
    return m.type


def _g_offset(o: Origin, m: Any) -> Any:
    return m.offset


def _g_size(o: Origin, m: Any) -> Any:
    return m.size


# Fields read from the origin alone: the same getter serves every protocol.
_ORIGIN_FIELDS = frozenset(("connection", "direction", "src", "dst", "capture_time_ns", "community_id"))


def _protocol_test(name: str) -> Getter:
    """A bare protocol name: true for that protocol's messages."""
    return lambda o, m: m.protocol == name


def _protocol_field_names() -> dict[str, str]:
    """Every protocol's -Y field -> the protocols that have it."""
    out: dict[str, str] = {}
    for name in registry.names():
        for f in registry.get(name).filter_fields:
            out[f] = f"{out[f]}, {name}" if f in out else name
    return out


def _all_type_names() -> tuple[str, ...]:
    """Every protocol's type names: its `type` field's choices, else the
    names of its table styles."""
    names: list[str] = []
    for name in registry.names():
        d = registry.get(name)
        typ = d.filter_fields.get("type")
        names += [t for t in (typ.choices if typ is not None and typ.choices else d.type_styles) if t not in names]
    return tuple(names)


def _typed_fields() -> dict[str, _Field]:
    """The fields whose kind is known when the filter is compiled: those a
    dissector reads itself (FilterField.get), then the ones every message
    has, then those of the origin."""
    out: dict[str, _Field] = {}
    for d in registry.all_dissectors():
        for name, ff in d.filter_fields.items():
            if ff.get is not None and name not in out:
                out[name] = _Field(name, ff.kind, ff.get, ff.choices, ff.choice_what)
    generic = (
        _Field("type", _STR, _g_type, (), "message type"),
        _Field("offset", _NUM, _g_offset),
        _Field("size", _NUM, _g_size),
        _Field("connection", _NUM, _g_connection),
        _Field("direction", _STR, _g_direction, ("c2s", "s2c"), "direction"),
        _Field("src", _STR, _g_src),
        _Field("dst", _STR, _g_dst),
        _Field("capture_time_ns", _NUM, _g_capture_time_ns),
        _Field("community_id", _STR, _g_community_id),
        _Field("protocol", _STR, _g_protocol, tuple(PROTOCOL_NAMES), "protocol"),
    )
    for f in generic:
        if f.name in _ORIGIN_FIELDS or f.name == "protocol" or f.name not in out:
            out[f.name] = f
    return out


_FIELDS: dict[str, _Field] = _typed_fields()

FIELD_NAMES: tuple[str, ...] = (*_FIELDS, "field.NAME")

# Names people may reach for, from the payload types and the JSON form.
_ALIASES = {
    "source_output": "output",
    "source_worker_id": "worker",
    "worker_id": "worker",
    "fingerprint": "schema",
    "msg": "type",
    "tag": "type",
}


# ------------------------------------------------------------------ tokens

_OPS = ("==", "!=", "<=", ">=", "&&", "||")
_SINGLE = "()<>{},~!"
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/+-")
_KEYWORDS = frozenset(("and", "or", "not", "contains", "matches", "in"))
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}
_HEX = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "word", "string", "op", "end"
    value: str  # a word, a string's decoded text, an operator
    column: int  # 1-based
    source: str  # as written


def _lex(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        col = i + 1
        two = text[i : i + 2]
        if two in _OPS:
            out.append(_Token("op", two, col, two))
            i += 2
        elif c in _SINGLE:
            out.append(_Token("op", c, col, c))
            i += 1
        elif c == '"':
            value, end = _string(text, i, raw=False)
            out.append(_Token("string", value, col, text[i:end]))
            i = end
        elif _is_word_char(c):
            j = i
            # A prime inside a word: OCaml's field names take one (`price'`).
            while j < n and (_is_word_char(text[j]) or text[j] == "'"):
                j += 1
            if j - i == 1 and c == "r" and text[j : j + 1] == '"':
                value, end = _string(text, j, raw=True, start=i)
                out.append(_Token("string", value, col, text[i:end]))
                i = end
                continue
            out.append(_Token("word", text[i:j], col, text[i:j]))
            i = j
        elif c == "=":
            raise FilterError("'=' is not an operator (did you mean '=='?)", col)
        elif c in "&|":
            raise FilterError(f"'{c}' is not an operator (did you mean '{c}{c}'?)", col)
        else:
            raise FilterError(f"unexpected character {_show_char(c)}", col)
    out.append(_Token("end", "", n + 1, ""))
    return out


def _is_word_char(c: str) -> bool:
    return c in _WORD_CHARS or (c > "\x7f" and c.isalnum())


def _show_char(c: str) -> str:
    return f"'{c}'" if c.isprintable() else f"U+{ord(c):04X}"


def _string(text: str, quote: int, raw: bool, start: int | None = None) -> tuple[str, int]:
    """The string whose opening quote is at `quote`: its text and the index
    after its closing quote.  `\\xHH` is the byte HH: the text is normalized
    so that it compares alike with bytes (as UTF-8, surrogateescape) and
    with decoded text.  `start`: where it begins (the `r` of a raw string)."""
    parts: list[str] = []
    i, n = quote + 1, len(text)
    while True:
        if i >= n:
            raise FilterError("unterminated string", (quote if start is None else start) + 1)
        c = text[i]
        if c == '"':
            break
        if c != "\\" or raw:
            parts.append(c)
            i += 1
            continue
        e = text[i + 1 : i + 2]
        if not e:
            raise FilterError("unterminated string", quote + 1)
        if e in _ESCAPES:
            parts.append(_ESCAPES[e])
            i += 2
        elif e == "x":
            hh = text[i + 2 : i + 4]
            if len(hh) != 2 or not all(h in _HEX for h in hh):
                raise FilterError("bad escape '\\x': it takes two hex digits, as in \\x0a", i + 1)
            b = int(hh, 16)
            parts.append(chr(b) if b < 0x80 else chr(0xDC00 + b))
            i += 4
        else:
            raise FilterError(f"unknown escape '\\{e}' (use '\\\\' for a backslash, or r\"...\")", i + 1)
    s = "".join(parts)
    try:
        s = s.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise FilterError("string is not valid text", quote + 1) from None
    return s, i + 1


# ------------------------------------------------------------------ literals

_INT_RE = re.compile(r"[+-]?(?:0[xX](?:_?[0-9a-fA-F])+|[0-9](?:_?[0-9])*)\Z")
_FLOAT_RE = re.compile(
    r"[+-]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)(?:[eE][+-]?[0-9]+)?\Z"
)
_SPECIAL_FLOATS = frozenset(("nan", "inf", "infinity"))


@dataclass(frozen=True, slots=True)
class _Literal:
    text: str  # compared with text values: a string's text, a word as written
    data: bytes  # the same, as UTF-8 bytes (surrogateescape), for byte values
    number: int | float | None
    boolean: bool | None
    column: int
    source: str


def _literal(tok: _Token) -> _Literal:
    text = tok.value
    number: int | float | None = None
    boolean: bool | None = None
    if tok.kind == "word":
        lower = text.lower()
        if text in ("true", "false"):
            boolean = text == "true"
        elif _INT_RE.match(text):
            try:
                number = int(text, 16) if "x" in lower else int(text, 10)
            except ValueError:  # more decimal digits than int() converts
                limit = sys.get_int_max_str_digits()
                raise FilterError(f"a number of more than {limit} digits", tok.column) from None
        elif lower.lstrip("+-") in _SPECIAL_FLOATS and len(lower) - len(lower.lstrip("+-")) <= 1:
            number = float(lower)
        elif _FLOAT_RE.match(text) and ("." in text or "e" in lower):
            number = float(text)
    return _Literal(text, text.encode("utf-8", "surrogateescape"), number, boolean, tok.column, tok.source)


# ------------------------------------------------------------------ tests


def _never(v: Any) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class _Tests:
    """One comparison, specialized per kind of value it may meet."""

    on_bytes: Test
    on_str: Test
    on_num: Test
    on_bool: Test
    on_list: Test


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _num_test(op: str, x: int | float) -> Test:
    if isinstance(x, float) and math.isnan(x):
        # nan == nan finds NaN values; no NaN is ordered.
        if op == "==":
            return lambda v: bool(v != v)
        if op == "!=":
            return lambda v: bool(v == v)
        return _never
    f = _COMPARE[op]
    return lambda v: f(v, x)


def _dispatch(tests: _Tests, v: Any) -> bool:
    while type(v) is tuple:
        v = v[0]
    t = type(v)
    if t is bytes:
        return tests.on_bytes(v)
    if t is str:
        return tests.on_str(v)
    if t is int or t is float:
        return tests.on_num(v)
    if t is bool:
        return tests.on_bool(v)
    if t is list:
        return tests.on_list(v)
    return False


def _hint(name: str, lits: list[_Literal]) -> Prefilter:
    """What `name == LIT` (or `name in {LITS}`) requires of a message, as
    Ripple's fields read it: its type's name, a Delta's output bytes, a
    Delta's key text (unless a literal is a number: a numeric key is then
    compared as a number)."""
    if name == "type":
        return Prefilter(types=frozenset(lit.text for lit in lits))
    if name == "output":
        return Prefilter(outputs=frozenset(lit.data for lit in lits))
    if name == "key" and all(lit.number is None for lit in lits):
        return Prefilter(keys=frozenset(lit.data for lit in lits))
    return UNKNOWN


def _compare_tests(op: str, lit: _Literal) -> _Tests:
    f = _COMPARE[op]
    s, b = lit.text, lit.data
    on_num = _never if lit.number is None else _num_test(op, lit.number)
    boolean = lit.boolean
    on_bool = _never if boolean is None else (lambda v: f(v, boolean))
    return _Tests(lambda v: f(v, b), lambda v: f(v, s), on_num, on_bool, _never)


def _contains_tests(lit: _Literal) -> _Tests:
    s, b = lit.text, lit.data
    element = _compare_tests("==", lit)

    def on_list(v: Any) -> bool:
        return any(_dispatch(element, x) for x in v)

    return _Tests(lambda v: b in v, lambda v: s in v, _never, _never, on_list)


def _matches_tests(lit: _Literal) -> _Tests:
    try:
        rx = re.compile(lit.text)
    except re.error as e:
        where = f" at position {e.pos}" if e.pos is not None else ""
        raise FilterError(f"bad regular expression: {e.msg}{where}", lit.column) from None
    except OverflowError as e:  # a repetition count above what re takes: "a{99999999999}"
        raise FilterError(f"bad regular expression: {e}", lit.column) from None
    except RecursionError:  # re's parser recurses once per group: "((((...a))))"
        raise FilterError("bad regular expression: groups nested too deep", lit.column) from None
    search = rx.search

    def on_bytes(v: Any) -> bool:
        return search(v.decode("utf-8", "surrogateescape")) is not None

    def on_str(v: Any) -> bool:
        return search(v) is not None

    tests = _Tests(on_bytes, on_str, _never, _never, _never)

    def on_list(v: Any) -> bool:
        return any(_dispatch(tests, x) for x in v)

    return _Tests(on_bytes, on_str, _never, _never, on_list)


def _member_tests(lits: list[_Literal]) -> _Tests:
    texts = frozenset(lit.text for lit in lits)
    datas = frozenset(lit.data for lit in lits)
    numbers = [lit.number for lit in lits if lit.number is not None]
    has_nan = any(isinstance(x, float) and math.isnan(x) for x in numbers)
    nums = frozenset(x for x in numbers if x == x)
    bools = frozenset(lit.boolean for lit in lits if lit.boolean is not None)

    def on_num(v: Any) -> bool:
        return v in nums or (has_nan and v != v)

    return _Tests(datas.__contains__, texts.__contains__, on_num if numbers else _never, bools.__contains__, _never)


def _field_predicate(field: _Field, tests: _Tests) -> Predicate:
    get = field.get
    kind = field.kind
    if kind == _ANY:

        def any_pred(o: Origin, m: Any) -> bool:
            v = get(o, m)
            return v is not None and _dispatch(tests, v)

        return any_pred
    f = {
        _NUM: tests.on_num,
        _BYTES: tests.on_bytes,
        _STR: tests.on_str,
        _BOOL: tests.on_bool,
        _LIST: tests.on_list,
    }[kind]

    def pred(o: Origin, m: Any) -> bool:
        v = get(o, m)
        return v is not None and f(v)

    return pred


def _key_predicate(field: _Field, on_text: Test, on_num: Test | None) -> Predicate:
    """A numeric key compares as a number with a number; otherwise the key
    compares as its text (`Decoded.key`: a decoded key's sexp, a raw key's
    0x hex).  The field's getter gives the key's value."""
    get = field.get

    def pred(o: Origin, m: Any) -> bool:
        if on_num is not None:
            k = get(o, m)
            t = type(k)
            if t is int or t is float:
                return on_num(k)
        text = m.key
        return text is not None and on_text(text)

    return pred


def _key_member_predicate(field: _Field, tests: _Tests, any_number: bool) -> Predicate:
    on_text, on_num = tests.on_str, tests.on_num
    get = field.get

    def pred(o: Origin, m: Any) -> bool:
        if any_number:
            k = get(o, m)
            t = type(k)
            if (t is int or t is float) and on_num(k):
                return True
        text = m.key
        return text is not None and on_text(text)

    return pred


def _truth_predicate(field: _Field) -> Predicate:
    get = field.get

    def pred(o: Origin, m: Any) -> bool:
        # Getters unwrap options; present and not empty, zero or false.
        return bool(get(o, m))

    return pred


def _any_of(preds: list[Predicate]) -> Predicate:
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        a, b = preds
        return lambda o, m: a(o, m) or b(o, m)
    items = tuple(preds)

    def pred(o: Origin, m: Any) -> bool:
        return any(p(o, m) for p in items)

    return pred


def _all_of(preds: list[Predicate]) -> Predicate:
    if len(preds) == 1:
        return preds[0]
    if len(preds) == 2:
        a, b = preds
        return lambda o, m: a(o, m) and b(o, m)
    items = tuple(preds)

    def pred(o: Origin, m: Any) -> bool:
        return all(p(o, m) for p in items)

    return pred


def _negate(p: Predicate) -> Predicate:
    return lambda o, m: not p(o, m)


# ------------------------------------------------------------------ parser

_COMPARISONS = frozenset(_COMPARE)
# Names as OCaml spells its record fields: a letter or `_` first, then
# letters, digits, `_` and primes (`price'`); letters beyond ASCII too.
_IDENT_RE = re.compile(r"[^\W\d][\w']*(?:\.[^\W\d][\w']*)*\Z")


def _suggest(word: str, candidates: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


# Parentheses nest at most this deep (the parser recurses at each); deeper is
# a filter that does not compile, not an exhausted stack.
MAX_PARENS = 64


class _Parser:
    def __init__(self, text: str, dissector: Dissector | None = None) -> None:
        self.tokens = _lex(text)
        self.i = 0
        self.parens = 0  # '(' open around the parser
        self.hint = ANYTHING  # what the last rule parsed requires (see or_expr)
        self.fields: set[str] = set()
        self.dissector = dissector  # compiling for this protocol's messages (None: checking only)

    def runtime(self, field: _Field) -> _Field:
        """The field as evaluated on this protocol's messages: with its kind
        when the dissector reads it itself, else by name, its kind told by
        the value."""
        d = self.dissector
        name = field.name
        if d is None or name in _ORIGIN_FIELDS or name in PROTOCOL_NAMES or name == "protocol":
            return field
        own = d.filter_fields.get(name)
        if own is not None and own.get is not None:
            return _Field(name, own.kind, own.get, own.choices, own.choice_what)
        return _Field(name, _ANY, d.getter(name))

    # -------------------------------------------------------- helpers

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        tok = self.tokens[self.i]
        if tok.kind != "end":
            self.i += 1
        return tok

    def at_word(self, *words: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == "word" and tok.value in words

    def at_op(self, *ops: str) -> bool:
        tok = self.tokens[self.i]
        return tok.kind == "op" and tok.value in ops

    def expected(self, what: str) -> FilterError:
        """`expected WHAT after 'PREV'` at the current token."""
        tok = self.peek()
        prev = self.tokens[self.i - 1] if self.i > 0 else None
        message = f"expected {what}"
        if prev is not None:
            message += f" after '{prev.source}'"
        if tok.kind != "end":
            message += f", found '{tok.source}'"
        return FilterError(message, tok.column)

    # -------------------------------------------------------- grammar

    def parse(self) -> Predicate:
        if self.peek().kind == "end":
            raise FilterError("empty filter", 1)
        pred = self.or_expr()
        tok = self.peek()
        if tok.kind != "end":
            if tok.kind == "op" and tok.value == ")":
                raise FilterError("unexpected ')' with no '(' to close", tok.column)
            raise FilterError(f"expected 'and' or 'or' before '{tok.source}'", tok.column)
        return pred

    # Each rule leaves in `self.hint` what a message must be for the part
    # it parsed to be true (a Prefilter: type, output and key equalities;
    # anything else asks nothing, and is not exact), so that a fast lane
    # passes over the messages that cannot be shown.  Only ever a
    # necessary condition; exact only where it is the whole test.

    def or_expr(self) -> Predicate:
        preds = [self.and_expr()]
        hint = self.hint
        while self.at_word("or") or self.at_op("||"):
            self.take()
            preds.append(self.and_expr())
            hint = hint | self.hint
        self.hint = hint
        return _any_of(preds)

    def and_expr(self) -> Predicate:
        preds = [self.unary()]
        hint = self.hint
        while self.at_word("and") or self.at_op("&&"):
            self.take()
            preds.append(self.unary())
            hint = hint & self.hint
        self.hint = hint
        return _all_of(preds)

    def unary(self) -> Predicate:
        # A run of `not`s in a loop, not a recursion: any number of them.
        nots = 0
        while self.at_word("not") or self.at_op("!"):
            self.take()
            nots += 1
        pred = self.group() if self.at_op("(") else self.test()
        if nots:
            self.hint = UNKNOWN  # (`not not` is true where its test is, but rare: ask nothing)
        return _negate(pred) if nots % 2 else pred

    def group(self) -> Predicate:
        opening = self.take()
        if self.parens >= MAX_PARENS:
            raise FilterError(f"parentheses nested more than {MAX_PARENS} deep", opening.column)
        self.parens += 1
        pred = self.or_expr()
        if not self.at_op(")"):
            tok = self.peek()
            found = "" if tok.kind == "end" else f", found '{tok.source}'"
            raise FilterError(f"expected ')' to close the '(' at column {opening.column}{found}", tok.column)
        self.take()
        self.parens -= 1
        return pred

    def test(self) -> Predicate:
        tok = self.peek()
        if tok.kind != "word" or tok.value in _KEYWORDS or tok.value in ("true", "false"):
            raise self.expected("a field name")
        field = self.field(tok)
        self.take()
        self.fields.add(tok.value)
        self.hint = UNKNOWN
        nxt = self.peek()
        if nxt.kind == "op" and nxt.value in _COMPARISONS:
            op = self.take()
            lit = self.value()
            self.check(field, op, [lit])
            if op.value == "==":
                self.hint = _hint(field.name, [lit])
            field = self.runtime(field)
            if field.kind == _KEY:
                tests = _compare_tests(op.value, lit)
                return _key_predicate(field, tests.on_str, tests.on_num if lit.number is not None else None)
            return _field_predicate(field, _compare_tests(op.value, lit))
        if self.at_word("contains"):
            op = self.take()
            self.check(field, op, [])
            field = self.runtime(field)
            lit = self.value()
            if field.kind == _KEY:
                return _key_predicate(field, _contains_tests(lit).on_str, None)
            return _field_predicate(field, _contains_tests(lit))
        if self.at_word("matches") or self.at_op("~"):
            op = self.take()
            self.check(field, op, [])
            field = self.runtime(field)
            lit = self.value()
            if field.kind == _KEY:
                return _key_predicate(field, _matches_tests(lit).on_str, None)
            return _field_predicate(field, _matches_tests(lit))
        negated = False
        if self.at_word("not") and self.tokens[self.i + 1].kind == "word" and self.tokens[self.i + 1].value == "in":
            self.take()
            negated = True
        if self.at_word("in"):
            op = self.take()
            lits = self.value_set()
            self.check(field, op, lits)
            if not negated:
                self.hint = _hint(field.name, lits)
            field = self.runtime(field)
            tests = _member_tests(lits)
            if field.kind == _KEY:
                pred = _key_member_predicate(field, tests, any(lit.number is not None for lit in lits))
            else:
                pred = _field_predicate(field, tests)
            if negated:
                # Absent stays false: `not in` is "present and not one of".
                inner, present = pred, self.presence(field)
                return lambda o, m: present(o, m) and not inner(o, m)
            return pred
        if nxt.kind == "string" or (nxt.kind == "word" and nxt.value not in ("and", "or")) or self.at_op("{"):
            raise self.expected("an operator")
        return _truth_predicate(self.runtime(field))

    def presence(self, field: _Field) -> Predicate:
        get = field.get
        return lambda o, m: get(o, m) is not None

    def field(self, tok: _Token) -> _Field:
        name = tok.value
        known = _FIELDS.get(name)
        if known is not None:
            if name == "type":  # any protocol's type names
                return _Field("type", known.kind, known.get, _all_type_names(), "message type")
            if name == "protocol":  # the protocols registered now
                return _Field("protocol", _STR, _g_protocol, tuple(PROTOCOL_NAMES), "protocol")
            return known
        if name in PROTOCOL_NAMES:  # `-Y lumberjack`, as tshark's `-Y tcp`
            return _Field(name, _BOOL, _protocol_test(name))
        head, _, rest = name.partition(".")
        if head in (theirs := _protocol_field_names()) and _IDENT_RE.match(name):
            # A sibling protocol's field: no Ripple message has it.
            return _Field(name, _ANY, lambda o, m: None)
        if head == "field":
            parts = rest.split(".") if rest else []
            if not parts or not _IDENT_RE.match(name):
                raise FilterError(f"bad field name '{name}': a row field is field.NAME or field.NAME.SUB", tok.column)
            return _Field(name, _ANY, lambda o, m: None)  # a Delta row's: the dissector reads it
        if not _IDENT_RE.match(name):
            raise self.expected("a field name")
        suggestion = _ALIASES.get(name) or _suggest(name, [*_FIELDS, *theirs])
        if suggestion is None and rest and _suggest(head, ["field"]):
            suggestion = f"field.{rest}"
        hint = f" (did you mean '{suggestion}'?)" if suggestion else ""
        raise FilterError(f"unknown field '{name}'{hint}", tok.column)

    def value(self) -> _Literal:
        tok = self.peek()
        if tok.kind == "string" or (tok.kind == "word" and tok.value not in _KEYWORDS):
            self.take()
            return _literal(tok)
        raise self.expected("a value")

    def value_set(self) -> list[_Literal]:
        if not self.at_op("{"):
            raise self.expected("'{'")
        self.take()
        lits = [self.value()]
        while not self.at_op("}"):
            if self.at_op(","):
                self.take()
                lits.append(self.value())
            elif self.peek().kind == "string" or (self.peek().kind == "word" and self.peek().value not in _KEYWORDS):
                lits.append(self.value())
            else:
                raise self.expected("',' or '}'")
        self.take()
        return lits

    def check(self, field: _Field, op: _Token, lits: list[_Literal]) -> None:
        """Compile-time checks for the built-in fields, whose kind is known."""
        kind, name, o = field.kind, field.name, op.value
        if kind in (_KEY, _ANY):
            return
        what = _WHAT[kind]
        if o in ("contains", "matches", "~") and kind in (_NUM, _BOOL):
            raise FilterError(f"'{op.source}' does not apply to {name} ({what})", op.column)
        if o in ("<", "<=", ">", ">=") and kind in (_BOOL, _LIST):
            raise FilterError(f"'{o}' does not apply to {name} ({what})", op.column)
        if o in ("==", "!=", "in") and kind == _LIST:
            raise FilterError(f"'{o}' does not apply to {name} ({what}): use 'contains' or 'matches'", op.column)
        for lit in lits:
            if kind == _NUM and lit.number is None:
                raise FilterError(f"expected a number for {name}, found '{lit.source}'", lit.column)
            if kind == _BOOL and lit.boolean is None:
                raise FilterError(f"expected true or false for {name}, found '{lit.source}'", lit.column)
            what_of = field.choice_what.rsplit(" ", 1)[-1]
            if field.choices and o in ("==", "!=", "in") and lit.text not in field.choices:
                lower = {c.lower(): c for c in field.choices}
                guess = lower.get(lit.text.lower()) or _suggest(lit.text, field.choices)
                listed = ", ".join(field.choices) if len(field.choices) <= 12 else f"no protocol has such a {what_of}"
                hint = f"did you mean '{guess}'?" if guess else listed
                raise FilterError(f"unknown {field.choice_what} '{lit.text}' ({hint})", lit.column)
