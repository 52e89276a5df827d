"""Accounts: sign-up, password check, the adoption of a browser's anonymous history, resets.

Passwords are hashed with argon2id (argon2-cffi's defaults, rehashed when they change) and are
never logged, stored in clear or exported; errors name the field, never its value.
"""

from __future__ import annotations

import re
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from web.accounts.sessions import account_visitor_token
from web.courses.service import invite
from web.store.accounts import STUDENT, Account, Membership, RosterEntry
from web.store.db import RegradeItem, Submission, Visitor, token_hash

USERNAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{1,63}$")
MIN_PASSWORD = 8
MAX_PASSWORD = 200
_hasher = PasswordHasher()
# Checked when the username is unknown, so a wrong name costs as long as a wrong password.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


class AccountError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def normal_username(name: str) -> str:
    return (name or "").strip().lower()


def check_new_password(password: str) -> None:
    if not (MIN_PASSWORD <= len(password or "") <= MAX_PASSWORD):
        raise AccountError(422, "bad_password", "a password is 8-200 characters")


def clean_display_name(name: str, fallback: str) -> str:
    name = " ".join((name or "").split())[:40]
    if not name or any(not ch.isprintable() for ch in name):
        return fallback
    return name


def create_account(db, settings, username: str, password: str | None, display_name: str = "",
                   is_staff: bool = False, oidc_subject: str | None = None) -> Account:
    username = normal_username(username)
    if not USERNAME_RE.match(username):
        raise AccountError(422, "bad_username", "a username (your student ID) is 2-64 "
                           "characters: lower-case letters, digits and . _ -")
    if password is not None:
        check_new_password(password)
    name = clean_display_name(display_name, username)
    with db.session() as s:
        if s.scalar(select(Account.id).where(Account.username == username)) is not None:
            raise AccountError(409, "username_taken", "that username is taken")
        # The visitor row first (its token is derived from the account id, known only after
        # the insert): a placeholder hash, replaced in the same transaction.
        visitor = Visitor(token_hash="pending:" + secrets.token_hex(16), display_name=name)
        s.add(visitor)
        s.flush()
        account = Account(username=username, display_name=name, is_staff=is_staff,
                          password_hash=_hasher.hash(password) if password is not None else None,
                          visitor_id=visitor.id, oidc_subject=oidc_subject)
        s.add(account)
        s.flush()
        visitor.token_hash = token_hash(account_visitor_token(settings, account.id))
        try:
            s.commit()
        except IntegrityError:
            s.rollback()
            raise AccountError(409, "username_taken", "that username is taken") from None
    enrol_from_rosters(db, account)
    return account


def authenticate(db, username: str, password: str) -> Account | None:
    """The account if the password is right (rehashing an outdated hash), else None."""
    with db.session() as s:
        account = s.scalar(select(Account).where(Account.username == normal_username(username)))
        stored = account.password_hash if account is not None else None
        try:
            _hasher.verify(stored or _DUMMY_HASH, password or "")
        except (VerificationError, InvalidHashError):
            return None
        if stored is None:  # matched the dummy: no such account (or OIDC-only)
            return None
        if _hasher.check_needs_rehash(stored):
            account.password_hash = _hasher.hash(password)
            s.commit()
        return account


def set_password(db, account_id: int, password: str, temporary: bool = False) -> None:
    """`temporary`: someone else chose it (a reset), so the account must choose its own."""
    check_new_password(password)
    with db.session() as s:
        account = s.get(Account, account_id)
        account.password_hash = _hasher.hash(password)
        account.must_change_password = temporary
        s.commit()


def change_password(db, account: Account, current: str, new: str, confirm: str) -> None:
    """The account's own change: the current password first (a session left open is not
    the person), the new one twice, and not the old one again."""
    if account.password_hash is None:
        raise AccountError(409, "no_password", "This account signs in through single sign-on: "
                           "it has no password here.")
    if authenticate(db, account.username, current) is None:
        raise AccountError(401, "wrong_password", "The current password is wrong.")
    if new != confirm:
        raise AccountError(422, "passwords_differ", "The two new passwords differ.")
    if new == current:
        raise AccountError(422, "same_password", "The new password must differ from the "
                           "current one.")
    set_password(db, account.id, new)


def rename(db, account_id: int, name: str) -> str:
    """The account's display name (and its visitor's, which the instructor's gradebook shows);
    a blank or unprintable name leaves it as it was. The name it has now."""
    with db.session() as s:
        account = s.get(Account, account_id)
        account.display_name = clean_display_name(name, account.display_name)
        s.get(Visitor, account.visitor_id).display_name = account.display_name
        s.commit()
        return account.display_name


def temporary_password() -> str:
    return secrets.token_urlsafe(9)


def adopt_history(db, account: Account, visitor_token: str | None) -> int:
    """Move the browser's anonymous submissions to the account; how many moved. A visitor that
    belongs to an account already is never taken over."""
    if not visitor_token:
        return 0
    with db.session() as s:
        v = s.scalar(select(Visitor).where(Visitor.token_hash == token_hash(visitor_token)))
        if v is None or v.id == account.visitor_id or s.scalar(
                select(Account.id).where(Account.visitor_id == v.id)) is not None:
            return 0
        moved = s.execute(update(Submission).where(Submission.visitor_id == v.id)
                          .values(visitor_id=account.visitor_id)
                          .execution_options(synchronize_session=False)).rowcount
        s.execute(update(RegradeItem).where(RegradeItem.visitor_id == v.id)
                  .values(visitor_id=account.visitor_id)
                  .execution_options(synchronize_session=False))
        s.commit()
        return moved


def enrol_from_rosters(db, account: Account) -> None:
    """A new account whose username a course's roster lists is invited to that course (it joins
    when it accepts, under its own name: the roster's name stays the course's word for it)."""
    with db.session() as s:
        courses = list(s.scalars(select(RosterEntry.course_id).where(
            RosterEntry.student_id == account.username, ~RosterEntry.course_id.in_(
                select(Membership.course_id).where(Membership.account_id == account.id)))))
    for course_id in courses:
        invite(db, course_id, account.id, STUDENT)


def has_accounts(db) -> bool:
    with db.session() as s:
        return bool(s.scalar(select(func.count()).select_from(Account)))


def staff_roles(db, account: Account | None) -> set[str]:
    """The roles this account holds in any course."""
    if account is None:
        return set()
    with db.session() as s:
        return set(s.scalars(select(Membership.role).where(Membership.account_id == account.id)))

