"""The text of a `send_message` call while the model is still writing it.

The model writes the call's arguments as JSON, a few characters at a time:
`{"message": "Hi \\"you\\"\\n…", "request_heartbeat": false}`. Fed those
pieces, `MessageStream.feed` returns the characters of the top-level
"message" string decoded so far, as soon as each is complete: an escape
(`\\n`, `\\"`, `\\uXXXX`, a surrogate pair) split across pieces comes out once
its last piece is in. Nothing comes after the closing quote.

It reads each character once (a small state machine, no re-parsing of the
prefix), so a long message costs linear time overall. The values of other
keys are skipped (their strings decoded and dropped, brackets matched,
literals checked); keys may come in any order, with any whitespace.

It never raises. On input that cannot be valid JSON (not an object, a
"message" that is not a string, a bad escape, a raw control character) it
stops: what it returned is still a prefix of what a tolerant parser of the
whole would find. A lone surrogate comes out as U+FFFD, as `clean_text`
makes the stored message. The first "message" key counts (a repeat, which
json.loads would prefer, comes too late to unsay the first).
"""

from __future__ import annotations

import re

# Where a state's plain run of characters ends.
_STRING_SPECIAL = re.compile(r'["\\\x00-\x1f]')
_NESTED_SPECIAL = re.compile(r'["{}\[\]]')
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_LITERAL_CHARS = re.compile(r"[0-9a-zA-Z+\-.]*")
_LITERAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r"}
_SIMPLE_ESCAPES["t"] = "\t"
_CLOSERS = {"{": "}", "[": "]"}
_HEX = frozenset("0123456789abcdefABCDEF")
_REPLACEMENT = "\ufffd"

# States between strings.
_OPEN, _FIRST_KEY, _KEY, _COLON, _VALUE, _NESTED, _LITERAL_STATE, _AFTER, _END = range(9)


class MessageStream:
    """Feed the pieces of a tool call's JSON arguments; get the new text of
    its top-level `key` string ("message" by default) from each."""

    def __init__(self, key: str = "message") -> None:
        self.key = key
        self.complete = False  # the string's closing quote was read
        self._state = _OPEN
        self._string: str | None = None  # inside a string: "key", "message" or "skip"
        self._escape = ""  # an escape begun in an earlier piece, e.g. "\\u00"
        self._high: int | None = None  # a high surrogate waiting for its low half
        self._key: list[str] = []  # the key being read (only as long as needed)
        self._key_length = 0
        self._matched = False  # the key just read is `key`
        self._found = False  # `key`'s value has started
        self._stack: list[str] = []  # closers of the nested value being skipped
        self._literal: list[str] = []  # a number, true, false or null being read

    def feed(self, piece: str) -> str:
        """The characters of the message that `piece` completes."""
        out: list[str] = []
        i = 0
        while i < len(piece) and self._state != _END:
            if self._string is not None:
                i = self._read_string(piece, i, out)
            elif self._state == _NESTED:
                i = self._skip_nested(piece, i)
            elif self._state == _LITERAL_STATE:
                i = self._read_literal(piece, i)
            else:
                i = _WHITESPACE.match(piece, i).end()  # type: ignore[union-attr]
                if i < len(piece):
                    self._structure(piece[i])
                    i += 1
        return "".join(out)

    # -- between strings -------------------------------------------------

    def _structure(self, c: str) -> None:
        """One character of the top-level object's structure."""
        state = self._state
        if state == _OPEN and c == "{":
            self._state = _FIRST_KEY
        elif state in (_FIRST_KEY, _KEY) and c == '"':
            self._string, self._key, self._key_length = "key", [], 0
        elif (state == _FIRST_KEY and c == "}") or (state == _AFTER and c == "}"):
            self._state = _END
        elif state == _COLON and c == ":":
            self._state = _VALUE
        elif state == _AFTER and c == ",":
            self._state = _KEY
        elif state == _VALUE:
            self._value(c)
        else:
            self._stop()  # not JSON

    def _value(self, c: str) -> None:
        if self._matched and not self._found:
            self._found = True
            if c == '"':
                self._string = "message"
            else:
                self._state = _END  # the message is not a string: nothing to show
        elif c == '"':
            self._string = "skip"
        elif c in _CLOSERS:
            self._stack, self._state = [_CLOSERS[c]], _NESTED
        elif c in "-0123456789tfn":
            self._literal, self._state = [c], _LITERAL_STATE
        else:
            self._state = _END

    def _skip_nested(self, piece: str, i: int) -> int:
        match = _NESTED_SPECIAL.search(piece, i)
        if match is None:
            return len(piece)
        c = match.group()
        if c == '"':
            self._string = "skip"
        elif c in _CLOSERS:
            self._stack.append(_CLOSERS[c])
        elif self._stack.pop() != c:
            self._state = _END  # brackets that do not match
        elif not self._stack:
            self._state = _AFTER
        return match.end()

    def _read_literal(self, piece: str, i: int) -> int:
        end = _LITERAL_CHARS.match(piece, i).end()  # type: ignore[union-attr]
        self._literal.append(piece[i:end])
        if end < len(piece):  # the literal ended in this piece
            whole = "".join(self._literal)
            self._state = _AFTER if _LITERAL.fullmatch(whole) else _END
        return end

    # -- strings ---------------------------------------------------------

    def _read_string(self, piece: str, i: int, out: list[str]) -> int:
        """Decode the string being read from piece[i:], to its end or the
        piece's; its text goes to `out` if it is the message."""
        kind = self._string
        text: list[str] = []
        while i < len(piece) and self._string is not None:
            if self._escape:
                i = self._read_escape(piece, i, text)
                continue
            match = _STRING_SPECIAL.search(piece, i)
            end = len(piece) if match is None else match.start()
            if end > i:
                self._flush_high(text)
                text.append(piece[i:end])
            if match is None:
                i = end
                break
            c, i = match.group(), end + 1
            if c == '"':
                self._flush_high(text)
                self._take(kind, text, out)  # before closing: the key is compared then
                text = []
                self._close_string()
            elif c == "\\":
                self._escape = "\\"
            else:
                self._stop()  # a raw control character: not JSON
        self._take(kind, text, out)
        return i

    def _read_escape(self, piece: str, i: int, text: list[str]) -> int:
        if self._escape == "\\":
            c = piece[i]
            if c == "u":
                self._escape = "\\u"
            elif c in _SIMPLE_ESCAPES:
                self._escape = ""
                self._flush_high(text)
                text.append(_SIMPLE_ESCAPES[c])
            else:
                self._stop()  # not a JSON escape
            return i + 1
        digits = piece[i : i + 6 - len(self._escape)]
        if not set(digits) <= _HEX:
            self._stop()
            return len(piece)
        self._escape += digits
        if len(self._escape) == 6:
            self._code_unit(int(self._escape[2:], 16), text)
            self._escape = ""
        return i + len(digits)

    def _code_unit(self, unit: int, text: list[str]) -> None:
        """A \\uXXXX escape: a character, or half of a surrogate pair."""
        if 0xD800 <= unit <= 0xDBFF:
            self._flush_high(text)
            self._high = unit  # wait for the low half, maybe in the next piece
        elif 0xDC00 <= unit <= 0xDFFF:
            if self._high is None:
                text.append(_REPLACEMENT)
            else:
                text.append(chr(0x10000 + ((self._high - 0xD800) << 10) + (unit - 0xDC00)))
                self._high = None
        else:
            self._flush_high(text)
            text.append(chr(unit))

    def _flush_high(self, text: list[str]) -> None:
        """A high surrogate followed by anything but its low half is lone."""
        if self._high is not None:
            text.append(_REPLACEMENT)
            self._high = None

    def _take(self, kind: str | None, text: list[str], out: list[str]) -> None:
        """Where a string's decoded text goes: out, the key (as much of it as
        can still match), or nowhere."""
        if kind == "message":
            out.extend(text)
        elif kind == "key" and self._key_length <= len(self.key):
            for part in text:
                self._key.append(part)
                self._key_length += len(part)

    def _close_string(self) -> None:
        kind = self._string
        self._string = None
        if kind == "key":
            self._matched = "".join(self._key) == self.key
            self._state = _COLON
        elif kind == "message":
            self.complete = True
            self._state = _END  # nothing after the closing quote matters
        elif not self._stack:
            self._state = _AFTER

    def _stop(self) -> None:
        """Input that cannot be JSON: nothing more comes out."""
        self._state, self._string, self._escape = _END, None, ""
