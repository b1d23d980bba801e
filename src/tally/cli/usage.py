"""``tally usage``: the usage export of a window, read from a store URL or from a running Reporting API.

Against a store (``--store URL``, default the configured store) it computes the export here, a page
of resources at a time; against an API (``--api URL``, token in ``TALLY_API_TOKEN``) it streams the
CSV, or follows the JSON pages, of ``GET /api/v1/usage``. Either way the output is the same document
(CSV lines, or one JSON object with every item), on stdout or in ``--out FILE``. On a terminal a
progress bar shows the resources read (store) or the lines received (API).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, nullcontext
from typing import IO, Any

import anyio
import httpx
import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tally.config import Settings
from tally.core import USAGE_GROUPS, InstantError, UsageWindow, format_instant, parse_instant, utc_now
from tally.rating import PriceList, PriceListError
from tally.store import StoreError, open_store
from tally.usage import (
    UsageQuery,
    WindowError,
    check_window,
    csv_header,
    csv_rows,
    csv_text,
    group_rows,
    quantity_members,
    resource_pages,
    resources_in_scope,
    row_json,
    write_focus,
    write_rated,
)

from . import period
from ._refuse import fail
from .price_list import read_price_list

TOKEN_ENV = "TALLY_API_TOKEN"
API_PAGE = 1000


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("usage", help="export metered usage of a window (CSV or JSON)")
    p.add_argument("--from", dest="start", required=True, help="inclusive start, RFC 3339 with a zone")
    p.add_argument("--to", dest="end", required=True, help="exclusive end, RFC 3339 with a zone")
    p.add_argument("--as-of", dest="as_of", help="count only events received before this instant")
    p.add_argument(
        "--group-by",
        dest="group_by",
        action="append",
        default=[],
        metavar="MEMBER",
        help=f"group lines by a member ({', '.join(sorted(USAGE_GROUPS))}); repeat or comma-separate",
    )
    for name in ("cloud", "platform", "project-id", "resource-type"):
        p.add_argument(f"--{name}", dest=name.replace("-", "_"), help=f"only this {name.replace('-', ' ')}")
    p.add_argument(
        "--format",
        choices=("csv", "json", "focus-csv", "focus-parquet"),
        default="csv",
        help="csv or json; focus-csv and focus-parquet (FOCUS 1.2) need --price-list",
    )
    p.add_argument(
        "--with-corrections",
        dest="with_corrections",
        action="store_true",
        help="FOCUS: add the correction lines of closed periods not yet delivered, and mark them delivered",
    )
    p.add_argument(
        "--provider",
        default="OpenStack",
        help="the FOCUS ProviderName, PublisherName and InvoiceIssuerName (default: OpenStack)",
    )
    p.add_argument(
        "--price-list",
        dest="price_list",
        metavar="FILE|NAME",
        help="rate the usage by this price list: a YAML file (--store), or a stored list's name (--api)",
    )
    p.add_argument("--out", help="write to this file (default: stdout)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--store", help="store URL (default: the configured store)")
    source.add_argument("--api", help=f"Reporting API base URL (token in ${TOKEN_ENV})")
    p.set_defaults(handler=run_usage)
    period.register(subparsers)


def _query(args: argparse.Namespace) -> UsageQuery:
    """The query of the arguments; raises ValueError with a message naming the flag."""
    bounds = {}
    for flag, value in (("--from", args.start), ("--to", args.end), ("--as-of", args.as_of)):
        if value is None:
            continue
        try:
            bounds[flag] = parse_instant(value)
        except InstantError as exc:
            raise ValueError(f"{flag}: {exc}") from None
    try:
        check_window(bounds["--from"], bounds["--to"])
    except WindowError as exc:
        raise ValueError(f"--{exc.parameter}: {exc}") from None
    group_by = [m for given in args.group_by for m in given.split(",") if m]
    unknown = sorted(set(group_by) - USAGE_GROUPS)
    if unknown:
        raise ValueError(
            f"--group-by: unknown member {unknown[0]!r} (one of {', '.join(sorted(USAGE_GROUPS))})"
        )
    as_of = bounds.get("--as-of")
    now = utc_now()
    return UsageQuery(
        window=UsageWindow(
            bounds["--from"], bounds["--to"], now if as_of is None else min(now, as_of), as_of
        ),
        cloud=args.cloud,
        platform=args.platform,
        project_id=args.project_id,
        resource_type=args.resource_type,
        group_by=tuple(dict.fromkeys(group_by)),
    )


def _progress(total: int | None, what: str) -> tuple[AbstractContextManager[Any], Callable[[int], None]]:
    """A rich progress bar on stderr when it is a terminal, else nothing."""
    if not sys.stderr.isatty():
        return nullcontext(), lambda n: None
    bar = Progress(
        TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=Console(stderr=True)
    )
    task = bar.add_task(what, total=total)
    return bar, lambda n: bar.advance(task, n)


def _json_head(query: UsageQuery) -> bytes:
    w = query.window
    head = {
        "from": format_instant(w.start),
        "to": format_instant(w.end),
        "as_of": format_instant(w.as_of) if w.as_of is not None else None,
        "group_by": list(query.group_by),
    }
    return orjson.dumps(head)[:-1] + b',"items":['


async def _from_store(
    url: str,
    query: UsageQuery,
    fmt: str,
    out: IO[bytes],
    price_list: PriceList | None,
    provider: str,
    with_corrections: bool,
) -> None:
    async with open_store(url) as store:
        status = await store.schema_status()
        if status.behind:
            raise ValueError(f"the store's schema is at {status.current}, this build needs {status.latest}")
        if price_list is not None:
            bar, advance = _progress(await resources_in_scope(store, query), "resources")
            with bar:
                if fmt.startswith("focus-"):
                    await write_focus(
                        store,
                        query,
                        price_list,
                        fmt,
                        out,
                        provider=provider,
                        with_corrections=with_corrections,
                        progress=advance,
                    )
                else:
                    await write_rated(store, query, price_list, fmt, out, progress=advance)
            return
        members = quantity_members(await store.list_resource_types(), query.resource_type)
        columns = query.columns
        bar, advance = _progress(await resources_in_scope(store, query), "resources")
        first = True

        def write(rows: list[Any]) -> None:
            nonlocal first
            if fmt == "csv":
                out.write(csv_rows(rows, members).encode())
                return
            for row in rows:
                out.write((b"" if first else b",") + orjson.dumps(row_json(columns, row)))
                first = False

        out.write(csv_text([csv_header(columns, members)]).encode() if fmt == "csv" else _json_head(query))
        with bar:
            if query.group_by:
                write(await group_rows(store, query, progress=advance))
            else:
                async for rows in resource_pages(store, query, progress=advance):
                    write(rows)
        if fmt == "json":
            out.write(b"]}\n")


def _params(query: UsageQuery) -> dict[str, Any]:
    w = query.window
    params: dict[str, Any] = {"from": format_instant(w.start), "to": format_instant(w.end)}
    if w.as_of is not None:
        params["as_of"] = format_instant(w.as_of)
    for name in ("cloud", "platform", "project_id", "resource_type"):
        if getattr(query, name) is not None:
            params[name] = getattr(query, name)
    if query.group_by:
        params["group_by"] = ",".join(query.group_by)
    return params


async def _api_pages(
    client: httpx.AsyncClient, route: str, params: dict[str, Any]
) -> AsyncIterator[list[Any]]:
    cursor = None
    while True:
        page_params = {**params, "limit": API_PAGE, **({"cursor": cursor} if cursor else {})}
        response = await client.get(route, params=page_params)
        _raise_for_problem(response)
        body = response.json()
        yield body["items"]
        cursor = body.get("next_cursor")
        if not cursor:
            return


def _raise_for_problem(response: httpx.Response) -> None:
    if response.status_code != 200:
        try:
            detail = response.json()
            errors = "; ".join(f"{e['loc']}: {e['msg']}" for e in detail.get("errors", []))
            message = errors or detail.get("detail") or detail.get("title")
        except ValueError:
            message = response.text[:200]
        raise ValueError(f"the API answered {response.status_code}: {message}")


async def _from_api(
    base: str, query: UsageQuery, fmt: str, out: IO[bytes], price_list: str | None = None
) -> None:
    token = os.environ.get(TOKEN_ENV)
    if not token:
        raise ValueError(f"--api needs a token in ${TOKEN_ENV}")
    headers = {"Authorization": f"Bearer {token}"}
    bar, advance = _progress(None, "lines")
    route, params = "/api/v1/usage", _params(query)
    if price_list is not None:
        route, params = "/api/v1/usage/rated", {**params, "price_list": price_list}
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=httpx.Timeout(30, read=600)
    ) as client:
        with bar:
            if fmt == "csv":
                csv_headers = {"Accept": "text/csv"}
                async with client.stream("GET", route, params=params, headers=csv_headers) as r:
                    if r.status_code != 200:
                        await r.aread()
                        _raise_for_problem(r)
                    async for chunk in r.aiter_bytes():
                        out.write(chunk)
                        advance(chunk.count(b"\n"))
                return
            out.write(_json_head(query))
            first = True
            async for items in _api_pages(client, route, params):
                for item in items:
                    out.write((b"" if first else b",") + orjson.dumps(item))
                    first = False
                advance(len(items))
            out.write(b"]}\n")


def _price_list(args: argparse.Namespace, query: UsageQuery) -> PriceList | None:
    if args.price_list is None:
        if args.format.startswith("focus-"):
            raise ValueError(f"--format {args.format}: a FOCUS export is rated: give --price-list")
        return None
    if query.group_by:
        raise ValueError("--price-list: rating is per resource; leave out --group-by")
    if args.api:
        if args.format != "csv":
            raise ValueError(f"--format {args.format}: with --api a rated export is CSV; use --store")
        return None  # the API rates by the stored list of that name (/api/v1/usage/rated)
    try:
        return read_price_list(args.price_list)
    except PriceListError as exc:
        raise ValueError(f"--price-list {args.price_list}: {exc}") from None


def run_usage(args: argparse.Namespace) -> int:
    try:
        query = _query(args)
        price_list = _price_list(args, query)
    except ValueError as exc:
        return fail("usage", str(exc))
    try:
        with open(args.out, "wb") if args.out else nullcontext(sys.stdout.buffer) as out:
            if args.api:
                anyio.run(_from_api, args.api, query, args.format, out, args.price_list)
            else:
                url = args.store or Settings().store_url
                run = (url, query, args.format, out, price_list, args.provider, args.with_corrections)
                anyio.run(_from_store, *run)
    except (ValueError, httpx.HTTPError, OSError, StoreError) as exc:
        return fail("usage", str(exc))
    return 0
