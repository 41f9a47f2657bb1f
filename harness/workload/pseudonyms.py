"""Stable, salted pseudonyms of user and account names.

A name becomes ``u-`` (users) or ``a-`` (accounts) and the first 12 hex digits of
HMAC-SHA256(salt, kind + NUL + name): the same name and salt give the same pseudonym in every
file (a site can convert its months one by one and join them), another salt gives unrelated
ones, and without the salt a pseudonym cannot be checked against a list of guessed names.
The kind is part of the message, so a user and an account of the same name do not share a
pseudonym. 12 hex digits are 48 bits: two of 100,000 names collide with odds about 2e-5.

The salt is the bytes of ``--salt`` or of a salt file, which is created with 32 random bytes
(hex) on first use, readable by its owner only, and reused: keep it to re-run a conversion
with the same pseudonyms; delete it and the next run makes new, unrelated ones.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from harness.model.atomic import write_private
from harness.model.checks import InputError

DIGITS = 12
PREFIXES = {"user": "u-", "account": "a-"}
SALT_FILE = "pseudonym.salt"  # beside the output, shared by every conversion written there


def pseudonym(salt: bytes, kind: str, name: str) -> str:
    """``u-3f9a2c1b7e0d``: the pseudonym of ``name`` (a ``user`` or an ``account``)."""
    digest = hmac.new(salt, f"{kind}\0{name}".encode(), hashlib.sha256).hexdigest()
    return PREFIXES[kind] + digest[:DIGITS]


@dataclass
class Salt:
    """The salt of a conversion: where it comes from and whether it must be written."""

    value: bytes
    source: str  # "--salt" or the salt file's path
    new_file: Path | None = None  # a salt file to create once the conversion has succeeded

    def save(self) -> None:
        """Write a new salt file (before the outputs: pseudonyms are never made from a salt
        that is then lost)."""
        if self.new_file is not None:
            write_private(self.new_file, self.value.decode() + "\n")
            self.new_file = None


def salt_for(given: str | None, salt_file: Path) -> Salt:
    """``--salt`` when given, else the salt file's (a new random one when it does not exist:
    written by :meth:`Salt.save`, not here, so a failed conversion leaves nothing)."""
    if given is not None:
        if not given:
            raise InputError("expected a non-empty salt", where="--salt")
        return Salt(given.encode(), "--salt")
    if salt_file.exists():
        try:
            text = salt_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{salt_file}: cannot read the salt ({exc})", where="--salt-file") from None
        if not text:
            raise InputError(f"{salt_file}: the salt file is empty", where="--salt-file")
        return Salt(text.encode(), str(salt_file))
    return Salt(secrets.token_hex(32).encode(), str(salt_file), new_file=salt_file)


@dataclass
class Numbering:
    """1, 2, 3 ... in order of first appearance: the integer ids SWF and the plan's ``user``
    column hold (stable for the same file; the pseudonym is the name that joins files)."""

    numbers: dict[str, int] = field(default_factory=dict)

    def number(self, name: str) -> int | None:
        if not name:
            return None
        return self.numbers.setdefault(name, len(self.numbers) + 1)
