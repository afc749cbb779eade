"""Annotator and admin accounts from the configuration; passwords are kept only as salted scrypt hashes."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from schemas.config import Account, Settings

# scrypt cost: about 50 ms per check on a laptop core, so guessing is slow and logging in is not
_N, _R, _P = 2 ** 14, 8, 1


def hash_password(password: str) -> str:
    """``scrypt$N$r$p$<salt hex>$<hash hex>``: what goes in ``[[annotation.users]] password_hash``."""
    if not password:
        raise ValueError("an empty password cannot be hashed")
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    return f"scrypt${_N}${_R}${_P}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        computed = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p),
                                  dklen=len(bytes.fromhex(digest)))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(computed.hex(), digest)


class Accounts:
    def __init__(self, settings: Settings) -> None:
        self.by_name: dict[str, Account] = {a.name: a for a in settings.annotation.users}

    def authenticate(self, name: str, password: str) -> bool:
        account = self.by_name.get(name)
        if account is None:
            hashlib.scrypt(b"x", salt=b"0" * 16, n=_N, r=_R, p=_P)  # as slow as a real check: no user probing
            return False
        return verify_password(password, account.password_hash)

    def role(self, name: str | None) -> str | None:
        account = self.by_name.get(name or "")
        return account.role if account else None
