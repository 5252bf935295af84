"""Private data in chat text, found and masked before anything is stored.

The store masks every text at its edge (messages, memories, profile entries, event and
session summaries, LangGraph store items), so what Redis keeps, what search indexes and
what the memory model reads (it reads the chat from the store) never hold the number.
`MEMLANE_PRIVACY_REDACTION=off` keeps texts as written.

What is masked, with the tag that replaces it (tags are plain ASCII, the same in every
language, and a masked text masks to itself):

- Chinese resident ID numbers, 18 characters (`110101 19900307 457X`, spaces or dashes
  between the groups allowed): the birth date must be a real date and the check character
  (ISO 7064 MOD 11-2) must match → `[ID number]`. The 15-digit numbers issued before 1999
  (`110105 491231 002`: area, birth date as YYMMDD in the 1900s, sequence; no check
  character) are masked too when the area starts with 1-8 and the birth date is a real date.
- Hong Kong identity card numbers (`A123456(3)`, `AB987654(3)`, with or without the
  parentheses): one or two letters, six digits, and the check character (mod 11) must match
  → `[ID number]`.
- Bank card numbers, 13 to 19 digits, grouped by single spaces or dashes or not, in groups
  of four joined by dots (`4111.1111.1111.1111`), or in groups of three to six joined by any of
  them, mixed (`3530 7777-7777.7778`): the Luhn checksum must hold →
  `[card ••••1234]` (the last four digits kept, as banks print them).
- Phone numbers → `[phone]`: Chinese mobiles (`1[3-9]x`, 11 digits, optional `+86`/`0086`,
  `138 1234 5678`, `138-1234-5678`, `138.2345.6783`), any number written with a `+` country code
  (`+44 20 7946 0958`, `+1 (415) 555-2671`), North American (`(415) 555-2671`,
  `415-555-2671`), Chinese landlines (`010-12345678`, `0755 1234567`), and European
  national numbers (`06 12 34 56 78`, `020 7946 0958`).
- E-mail addresses → `[email]`, a space on either side of the `@` too (`chen.jie @ example.net`).

Full-width characters, which Chinese and Japanese input methods type (`４１１１　１１１１…`,
`１３８１２３４５６７８`, `ｚｈａｎｇ＠ｅｘａｍｐｌｅ．ｃｏｍ`), are read as their ASCII twins: each
is one character for one, so the tag replaces exactly what was typed.

Not masked (nothing in them can be checked, so a pattern would mask ordinary numbers and
words as well): passport numbers, other countries' ids, street addresses, names, birth dates
on their own, IBANs and account numbers.

A digit run that fails its checksum is not an ID or a card: an 18-digit number with a
wrong check character, or a 16-digit number that fails Luhn, stays as written. The phone
patterns never match inside a longer digit run (they need a non-digit on both sides), so
such a number is not half-masked as a phone either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Literal

from memlane.store.text.spans import ClaimedSpans

PrivacyMode = Literal["mask", "off"]
PrivateKind = Literal["id_number", "bank_card", "phone", "email"]

ID_NUMBER_TAG = "[ID number]"
PHONE_TAG = "[phone]"
EMAIL_TAG = "[email]"


def card_tag(digits: str) -> str:
    """The tag of a card number: its last four digits kept."""
    return f"[card ••••{digits[-4:]}]"


@dataclass(frozen=True)
class PrivateSpan:
    """One piece of private data found in a text."""

    kind: PrivateKind
    start: int
    end: int
    text: str

    @property
    def tag(self) -> str:
        if self.kind == "id_number":
            return ID_NUMBER_TAG
        if self.kind == "bank_card":
            return card_tag(_digits(self.text))
        return PHONE_TAG if self.kind == "phone" else EMAIL_TAG


# full-width forms (U+FF01-FF5E, and the ideographic space) as their ASCII twins, one for one
_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}
_ASCII_DIGIT = re.compile(r"[0-9]")
_EMAIL = re.compile(  # a space on either side of the "@" too, as some type it ("chen.jie @ example.net")
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]*(?: ?@ ?)"
    r"[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,}"
    r"(?![A-Za-z0-9\-])"
)
# 6-digit area, 8-digit birth date, 3-digit sequence, check character; groups may be spaced
_ID_NUMBER = re.compile(r"(?<![0-9])[1-9][0-9]{5}[ \-]?[0-9]{8}[ \-]?[0-9]{3}[0-9Xx](?![0-9A-Za-z])")
# the first-generation (1984-1999) number: 6-digit area, YYMMDD birth date, 3-digit sequence
_OLD_ID_NUMBER = re.compile(r"(?<![0-9])[1-8][0-9]{5}[ \-]?[0-9]{6}[ \-]?[0-9]{3}(?![0-9A-Za-z])")
# Hong Kong identity card: one or two letters, six digits, the check character (in parentheses or not)
_HK_ID = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{1,2}[0-9]{6}(?:\([0-9Aa]\)|[0-9Aa])(?![A-Za-z0-9(])")
# a run of digits with single spaces or dashes between groups: a card candidate (after a "+"
# it is a phone number with its country code)
_DIGIT_RUN = re.compile(r"(?<![0-9+])[0-9]+(?:[ \-][0-9]+)*(?![0-9])")
# groups of four joined by dots, the last of 1 to 4 (not a decimal, a version or an address:
# those are under 13 digits or not grouped by four)
_DOTTED_CARD = re.compile(r"(?<![0-9+.])[0-9]{4}(?:\.[0-9]{4}){2,3}\.[0-9]{1,4}(?![0-9]|\.[0-9])")
# groups of three to six joined by any of space, dash and dot, mixed ("3530 7777-7777.7778")
_MIXED_CARD = re.compile(r"(?<![0-9+.])[0-9]{3,6}(?:[ .\-][0-9]{3,6}){2,5}(?![0-9]|\.[0-9])")
_PHONES = [
    # Chinese mobile, optional +86 / 0086, 3-4-4 groups optionally separated
    re.compile(r"(?<![0-9+.])(?:(?:\+|00)86[ \-]?)?1[3-9][0-9](?:[ .\-]?[0-9]{4}){2}(?![0-9]|\.[0-9])"),
    # anything with a + country code: 8 to 15 digits, single separators (or "(...)")
    re.compile(r"(?<![0-9A-Za-z+])\+[0-9](?:[ .\-()]{0,2}[0-9]){7,14}(?![0-9])"),
    # North American: (415) 555-2671, 415-555-2671, 415.555.2671
    re.compile(r"(?<![0-9])(?:\([0-9]{3}\)[ .\-]?|[0-9]{3}[ .\-])[0-9]{3}[ .\-][0-9]{4}(?![0-9])"),
    # Chinese landline: 010-12345678, 0755 1234567
    re.compile(r"(?<![0-9])0[1-9][0-9]{1,2}[ \-][0-9]{7,8}(?![0-9])"),
    # European national: 06 12 34 56 78, 020 7946 0958, 07911 123456
    re.compile(r"(?<![0-9])0[1-9](?:[ .\-]?[0-9]{2}){4}(?![0-9])"),
    re.compile(r"(?<![0-9])0[1-9][0-9]{1,3}[ \-][0-9]{3,4}[ \-]?[0-9]{3,4}(?![0-9])"),
]

_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_ID_CHECK = "10X98765432"


def fold_full_width(text: str) -> str:
    """`text` with full-width digits, letters and signs as ASCII (same length, same positions)."""
    return text.translate(_FULL_WIDTH)


def _digits(text: str) -> str:
    return "".join(_ASCII_DIGIT.findall(fold_full_width(text)))


def is_resident_id(number: str) -> bool:
    """Whether `number` (separators ignored) is a well-formed Chinese resident ID: 18 characters
    with a real birth date and the right check character, or the 15 digits of a pre-1999 number
    with a real birth date in the 1900s."""
    compact = re.sub(r"[ \-]", "", fold_full_width(number)).upper()
    if re.fullmatch(r"[1-8][0-9]{14}", compact):
        try:
            date(1900 + int(compact[6:8]), int(compact[8:10]), int(compact[10:12]))
        except ValueError:
            return False
        return True
    if not re.fullmatch(r"[1-9][0-9]{16}[0-9X]", compact):
        return False
    try:
        born = date(int(compact[6:10]), int(compact[10:12]), int(compact[12:14]))
    except ValueError:
        return False
    if not 1800 <= born.year <= date.today().year:
        return False
    total = sum(int(digit) * weight for digit, weight in zip(compact[:17], _ID_WEIGHTS))
    return _ID_CHECK[total % 11] == compact[17]


def is_hong_kong_id(number: str) -> bool:
    """Whether `number` is a Hong Kong identity card number whose check character matches (letters
    count 10-35, a missing second letter 36, weights 9 to 2; the sum with the check is 0 mod 11)."""
    match = re.fullmatch(r"([A-Z]{1,2})([0-9]{6})\(?([0-9A])\)?", fold_full_width(number).upper())
    if not match:
        return False
    letters, digits, check = match.groups()
    values = (
        ([36] if len(letters) == 1 else [])
        + [ord(letter) - 55 for letter in letters]
        + [int(digit) for digit in digits]
    )
    total = sum(value * weight for value, weight in zip(values, range(9, 1, -1)))
    return (total + (10 if check == "A" else int(check))) % 11 == 0


def passes_luhn(digits: str) -> bool:
    """The Luhn checksum of a digit string (card numbers carry one)."""
    if not digits.isdigit() or not digits.isascii():
        return False
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def find_private_data(text: str) -> list[PrivateSpan]:
    """The private data in `text`, in order, without overlaps (e-mails, then ID numbers,
    Chinese mobiles, cards and other phones claim their characters, in that order). Each
    span's `text` is as written; full-width characters are found as their ASCII twins."""
    written, text = text, fold_full_width(text or "")
    if not text or (not _ASCII_DIGIT.search(text) and "@" not in text):
        return []
    spans: list[PrivateSpan] = []
    taken = ClaimedSpans()
    free = taken.free

    def claim(kind: PrivateKind, match: re.Match[str]) -> None:
        spans.append(PrivateSpan(kind, match.start(), match.end(), written[match.start() : match.end()]))
        taken.claim(match.start(), match.end())

    for match in _EMAIL.finditer(text):
        claim("email", match)
    for pattern in (_ID_NUMBER, _OLD_ID_NUMBER):
        for match in pattern.finditer(text):
            if free(match.start(), match.end()) and is_resident_id(match.group()):
                claim("id_number", match)
    for match in _HK_ID.finditer(text):
        if free(match.start(), match.end()) and is_hong_kong_id(match.group()):
            claim("id_number", match)
    for match in _PHONES[0].finditer(text):  # a Chinese mobile with its 0086 is no card
        if free(match.start(), match.end()):
            claim("phone", match)
    for pattern in (_DIGIT_RUN, _DOTTED_CARD, _MIXED_CARD):
        for match in pattern.finditer(text):
            digits = _digits(match.group())
            if 13 <= len(digits) <= 19 and free(match.start(), match.end()) and passes_luhn(digits):
                claim("bank_card", match)
    for pattern in _PHONES[1:]:
        for match in pattern.finditer(text):
            if free(match.start(), match.end()):
                claim("phone", match)
    return sorted(spans, key=lambda span: span.start)


def mask_private_data(text: str) -> str:
    """`text` with each piece of private data replaced by its tag."""
    spans = find_private_data(text)
    if not spans:
        return text
    parts = []
    position = 0
    for span in spans:
        parts.append(text[position : span.start])
        parts.append(span.tag)
        position = span.end
    parts.append(text[position:])
    return "".join(parts)


def redact(text: str, mode: PrivacyMode) -> str:
    """`text` as the store keeps it under `mode` (the `privacy_redaction` setting)."""
    return mask_private_data(text) if mode == "mask" else text
