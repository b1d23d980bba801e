"""``tally token`` and ``tally ingest-credential``: create (optionally expiring), list and revoke secrets;
``tally policy-defaults``: the keystone-token policy's default rules.

A secret is minted here, printed once on stdout (and nowhere else: not logged,
not stored) and only its sha256 is kept; the record's id goes to stderr so
that ``SECRET=$(tally token create ...)`` captures exactly the secret. Every
create and revoke writes an audit row naming the operator (``cli:<user>``) in
the same transaction. The API checks the store on every request, so a revoke
or an expiry refuses the secret from the next request on.
"""

from __future__ import annotations

import argparse
import getpass
import json
import re
import secrets
import sys
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from tally.config import Settings
from tally.core import InstantError, format_instant, parse_instant, utc_now
from tally.store import (
    ApiToken,
    IngestCredential,
    RuleViolation,
    SchemaRole,
    TokenRole,
    hash_secret,
    open_store,
)

from ._refuse import fail

SECRET_BYTES = 32
_DURATION = re.compile(r"(\d{1,6})([smhd])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
# An expiry further away than this is a typo rather than a plan.
MAX_LIFETIME = timedelta(days=3660)


class ExpiryError(ValueError):
    """``--expires`` names no instant in the future (the message says what was given)."""


def parse_expiry(text: str, now: datetime) -> datetime:
    """The instant ``--expires`` names: a duration from ``now`` (``90d``, ``12h``, ``30m``, ``3600s``)
    or an RFC 3339 instant with a zone; it must lie after ``now`` and within ten years of it."""
    match = _DURATION.fullmatch(text.strip())
    if match:
        at = now + timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    else:
        try:
            at = parse_instant(text.strip())
        except (InstantError, OverflowError):
            raise ExpiryError(
                f"--expires {text!r} is neither a duration (90d, 12h, 30m, 3600s) nor an RFC 3339 "
                "instant with a zone (2027-01-01T00:00:00Z)"
            ) from None
    if at <= now:
        raise ExpiryError(f"--expires {text!r} is not in the future (now is {format_instant(now)})")
    if at - now > MAX_LIFETIME:
        raise ExpiryError(f"--expires {text!r} is more than {MAX_LIFETIME.days} days away")
    return at


def register(subparsers: Any) -> None:
    token = subparsers.add_parser("token", help="API tokens of the Reporting API")
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = token_sub.add_parser("create", help="create an API token and print its secret once")
    create.add_argument("--role", required=True, choices=("admin", "read_all", "project"))
    create.add_argument(
        "--project-id",
        dest="project_ids",
        action="append",
        default=[],
        metavar="UUID",
        help="a project the token may read (repeat; required for --role project)",
    )
    _common_create(create)
    create.set_defaults(handler=create_token)
    _list_and_revoke(token_sub, "token", list_tokens, revoke_token)

    cred = subparsers.add_parser("ingest-credential", help="ingest credentials of POST /api/v1/events")
    cred_sub = cred.add_subparsers(dest="credential_command", metavar="ACTION", required=True)
    ccreate = cred_sub.add_parser("create", help="create an ingest credential for one (platform, cloud)")
    ccreate.add_argument("--platform", required=True)
    ccreate.add_argument("--cloud", required=True)
    _common_create(ccreate)
    ccreate.set_defaults(handler=create_ingest_credential)
    _list_and_revoke(cred_sub, "ingest credential", list_ingest_credentials, revoke_ingest_credential)

    defaults = subparsers.add_parser(
        "policy-defaults", help="print the keystone-token policy's default rules"
    )
    defaults.set_defaults(handler=print_policy_defaults)


def print_policy_defaults(args: argparse.Namespace) -> int:
    from tally.http import sample_yaml  # the HTTP stack and oslo.policy are loaded by this command alone

    print(sample_yaml())
    return 0


def _common_create(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--description", default=None)
    parser.add_argument(
        "--expires",
        default=None,
        metavar="WHEN",
        help="refuse the secret from then on: a duration (90d, 12h, 30m) or an RFC 3339 instant",
    )


def _list_and_revoke(sub: Any, noun: str, lister: Any, revoker: Any) -> None:
    listing = sub.add_parser("list", help=f"every {noun} (never its secret) with its status")
    listing.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    listing.set_defaults(handler=lister)
    revoke = sub.add_parser(
        "revoke", help=f"revoke an {noun} now" if noun[0] in "aeiou" else f"revoke a {noun} now"
    )
    revoke.add_argument("id", metavar="ID", help=f"the id of the {noun} (from list or create)")
    revoke.set_defaults(handler=revoker)


def operator() -> str:
    """The audit actor of a command: the operating system user who ran it."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name (a container without a passwd entry)
        return "cli:unknown"


async def _schema_ready(store: SchemaRole) -> str | None:
    status = await store.schema_status()
    if status.behind:
        return (
            f"the database schema is at version {status.current}, this build needs {status.latest}: "
            "run `tally migrate up` first"
        )
    return None


def _expiry(args: argparse.Namespace) -> datetime | None:
    return None if args.expires is None else parse_expiry(args.expires, utc_now())


async def create_token(args: argparse.Namespace) -> int:
    role: TokenRole = args.role
    project_ids: list[str] = []
    for given in args.project_ids:
        try:
            project_ids.append(str(uuid.UUID(given)))
        except ValueError:
            return fail("", f"--project-id {given!r} is not a project id (a UUID)")
    if role == "project" and not project_ids:
        return fail("", "--role project needs at least one --project-id")
    if role != "project" and project_ids:
        return fail("", f"--project-id applies to --role project only, not {role}")
    try:
        expires_at = _expiry(args)
    except ExpiryError as exc:
        return fail("", str(exc))
    secret = "tly_" + secrets.token_urlsafe(SECRET_BYTES)
    async with open_store(Settings().store_url) as store:
        problem = await _schema_ready(store)
        if problem:
            return fail("", problem)
        for project_id in project_ids:
            if await store.get_project(project_id) is None:
                return fail("", f"no project {project_id}")
        try:
            token = await store.create_api_token(
                token_hash=hash_secret(secret),
                role=role,
                project_ids=project_ids,
                description=args.description,
                expires_at=expires_at,
                actor=operator(),
            )
        except RuleViolation as exc:
            return fail("", str(exc))
    print(f"created api token id={token.id} role={token.role} expires={_when(expires_at)}", file=sys.stderr)
    print(secret)
    return 0


async def create_ingest_credential(args: argparse.Namespace) -> int:
    platform: str = args.platform
    cloud: str = args.cloud
    for name, value in (("--platform", platform), ("--cloud", cloud)):
        if not value or len(value) > 512:
            return fail("", f"{name} must be 1 to 512 characters")
        if value in ("meta", "partner"):
            return fail("", f"{name} {value!r} is reserved for virtual projects")
    try:
        expires_at = _expiry(args)
    except ExpiryError as exc:
        return fail("", str(exc))
    secret = "tli_" + secrets.token_urlsafe(SECRET_BYTES)
    async with open_store(Settings().store_url) as store:
        problem = await _schema_ready(store)
        if problem:
            return fail("", problem)
        credential = await store.create_ingest_credential(
            platform=platform,
            cloud=cloud,
            token_hash=hash_secret(secret),
            description=args.description,
            expires_at=expires_at,
            actor=operator(),
        )
    print(
        f"created ingest credential id={credential.id} platform={platform} cloud={cloud} "
        f"expires={_when(expires_at)}",
        file=sys.stderr,
    )
    print(secret)
    return 0


def _when(value: datetime | None) -> str:
    return "never" if value is None else format_instant(value)


def token_json(token: ApiToken, now: datetime) -> dict[str, Any]:
    return {
        "id": token.id,
        "role": token.role,
        "project_ids": list(token.project_ids),
        "status": token.status(now),
        "created_at": format_instant(token.created_at),
        "expires_at": None if token.expires_at is None else format_instant(token.expires_at),
        "revoked_at": None if token.revoked_at is None else format_instant(token.revoked_at),
        "description": token.description,
    }


def credential_json(credential: IngestCredential, now: datetime) -> dict[str, Any]:
    return {
        "id": credential.id,
        "platform": credential.platform,
        "cloud": credential.cloud,
        "status": credential.status(now),
        "created_at": format_instant(credential.created_at),
        "expires_at": None if credential.expires_at is None else format_instant(credential.expires_at),
        "revoked_at": None if credential.revoked_at is None else format_instant(credential.revoked_at),
        "description": credential.description,
    }


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """Aligned columns, one line per row; lists are joined with commas and absent values shown as -."""

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        if isinstance(value, list):
            return ",".join(value) or "-"
        return str(value)

    cells = [[cell(row[c]) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(line[i]) for line in cells]) for i, c in enumerate(columns)]
    lines = [list(columns), *cells]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


async def _listing(args: argparse.Namespace, kind: str) -> int:
    async with open_store(Settings().store_url) as store:
        problem = await _schema_ready(store)
        if problem:
            return fail("", problem)
        now = utc_now()
        if kind == "token":
            rows = [token_json(t, now) for t in await store.list_api_tokens()]
            columns: tuple[str, ...] = ("id", "role", "project_ids", "status")
        else:
            rows = [credential_json(c, now) for c in await store.list_ingest_credentials()]
            columns = ("id", "platform", "cloud", "status")
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(render_table(rows, (*columns, "created_at", "expires_at", "revoked_at", "description")))
    return 0


async def list_tokens(args: argparse.Namespace) -> int:
    return await _listing(args, "token")


async def list_ingest_credentials(args: argparse.Namespace) -> int:
    return await _listing(args, "credential")


async def _revoke(args: argparse.Namespace, kind: str) -> int:
    noun = "api token" if kind == "token" else "ingest credential"
    try:
        object_id = str(uuid.UUID(args.id))
    except ValueError:
        return fail("", f"{args.id!r} is not an {noun} id (a UUID)")
    async with open_store(Settings().store_url) as store:
        problem = await _schema_ready(store)
        if problem:
            return fail("", problem)
        if kind == "token":
            known: Sequence[ApiToken | IngestCredential] = await store.list_api_tokens()
            revoked = await store.revoke_api_token(object_id, actor=operator())
        else:
            known = await store.list_ingest_credentials()
            revoked = await store.revoke_ingest_credential(object_id, actor=operator())
    if not revoked:
        found = next((k for k in known if k.id == object_id), None)
        if found is None:
            return fail("", f"no {noun} {object_id}")
        print(f"{noun} {object_id} was already revoked at {_when(found.revoked_at)}", file=sys.stderr)
        return 1
    print(f"revoked {noun} id={object_id}; its secret is refused from the next request on", file=sys.stderr)
    return 0


async def revoke_token(args: argparse.Namespace) -> int:
    return await _revoke(args, "token")


async def revoke_ingest_credential(args: argparse.Namespace) -> int:
    return await _revoke(args, "credential")
