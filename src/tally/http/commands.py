"""``tally token create`` and ``tally ingest-credential create``: mint a secret, store only its hash.

The secret is printed once on stdout (and nowhere else: not logged, not
stored); the record's id goes to stderr so that ``SECRET=$(tally token create
...)`` captures exactly the secret.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import uuid
from typing import Any

from tally.config import Settings
from tally.store import RuleViolation, Store, TokenRole, hash_secret, open_store

SECRET_BYTES = 32


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
    create.add_argument("--description", default=None)
    create.set_defaults(handler=create_token)

    cred = subparsers.add_parser("ingest-credential", help="ingest credentials of POST /api/v1/events")
    cred_sub = cred.add_subparsers(dest="credential_command", metavar="ACTION", required=True)
    ccreate = cred_sub.add_parser("create", help="create an ingest credential for one (platform, cloud)")
    ccreate.add_argument("--platform", required=True)
    ccreate.add_argument("--cloud", required=True)
    ccreate.add_argument("--description", default=None)
    ccreate.set_defaults(handler=create_ingest_credential)


def _fail(message: str) -> int:
    print(f"tally: {message}", file=sys.stderr)
    return 2


async def _schema_ready(store: Store) -> str | None:
    status = await store.schema_status()
    if status.behind:
        return (
            f"the database schema is at version {status.current}, this build needs {status.latest}: "
            "run `tally migrate up` first"
        )
    return None


async def create_token(args: argparse.Namespace) -> int:
    role: TokenRole = args.role
    project_ids: list[str] = []
    for given in args.project_ids:
        try:
            project_ids.append(str(uuid.UUID(given)))
        except ValueError:
            return _fail(f"--project-id {given!r} is not a project id (a UUID)")
    if role == "project" and not project_ids:
        return _fail("--role project needs at least one --project-id")
    if role != "project" and project_ids:
        return _fail(f"--project-id applies to --role project only, not {role}")
    secret = "tly_" + secrets.token_urlsafe(SECRET_BYTES)
    async with open_store(Settings().store_url) as store:
        problem = await _schema_ready(store)
        if problem:
            return _fail(problem)
        for project_id in project_ids:
            if await store.get_project(project_id) is None:
                return _fail(f"no project {project_id}")
        try:
            token = await store.create_api_token(
                token_hash=hash_secret(secret),
                role=role,
                project_ids=project_ids,
                description=args.description,
            )
        except RuleViolation as exc:
            return _fail(str(exc))
    print(f"created api token id={token.id} role={token.role}", file=sys.stderr)
    print(secret)
    return 0


async def create_ingest_credential(args: argparse.Namespace) -> int:
    platform: str = args.platform
    cloud: str = args.cloud
    for name, value in (("--platform", platform), ("--cloud", cloud)):
        if not value or len(value) > 512:
            return _fail(f"{name} must be 1 to 512 characters")
        if value in ("meta", "partner"):
            return _fail(f"{name} {value!r} is reserved for virtual projects")
    secret = "tli_" + secrets.token_urlsafe(SECRET_BYTES)
    async with open_store(Settings().store_url) as store:
        problem = await _schema_ready(store)
        if problem:
            return _fail(problem)
        credential = await store.create_ingest_credential(
            platform=platform, cloud=cloud, token_hash=hash_secret(secret), description=args.description
        )
    print(f"created ingest credential id={credential.id} platform={platform} cloud={cloud}", file=sys.stderr)
    print(secret)
    return 0
