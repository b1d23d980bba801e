"""``tally price-list check|load|list``: a price list checked, stored, and read back.

``check FILE`` needs no store: it checks the YAML and summarizes its versions. ``load FILE`` checks
it and stores its versions (``--store URL``, default the configured store): a version already in
force must be given unchanged, so a load that would edit one is refused and changes nothing.
``list`` prints the stored lists and their versions. A refusal is one line naming the member or
version at fault, and the exit code is 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tally.core import format_instant
from tally.rating import PriceList, PriceListError, load_price_list, version_document


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("price-list", help="check, load and list price lists")
    sub = parser.add_subparsers(dest="price_list_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="check a price list's YAML and summarize its versions")
    check.add_argument("file", help="the price list (YAML)")
    check.set_defaults(handler=run_check)
    load = sub.add_parser("load", help="check a price list and store its versions")
    load.add_argument("file", help="the price list (YAML)")
    load.add_argument("--store", help="store URL (default: the configured store)")
    load.set_defaults(handler=run_load)
    listing = sub.add_parser("list", help="the stored price lists and their versions")
    listing.add_argument("--store", help="store URL (default: the configured store)")
    listing.set_defaults(handler=run_list)


def read_price_list(path: str) -> PriceList:
    """The checked price list in ``path``; ``PriceListError`` names the file's member at fault."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise PriceListError("", f"cannot read {path}: {exc}") from None
    return load_price_list(text)


def summary(price_list: PriceList) -> list[str]:
    lines = [f"price list {price_list.name}: {price_list.currency}, {len(price_list.versions)} version(s)"]
    for v in price_list.versions:
        types = ", ".join(sorted(v.types))
        lines.append(
            f"  from {format_instant(v.effective_from)}: {types} (granularity {v.granularity_seconds} s, "
            f"minimum {v.minimum_seconds} s)"
        )
    return lines


def run_check(args: argparse.Namespace) -> int:
    try:
        price_list = read_price_list(args.file)
    except PriceListError as exc:
        print(f"tally price-list check: {args.file}: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary(price_list)))
    return 0


def _store_url(args: argparse.Namespace) -> str:
    from tally.config import Settings

    return str(args.store or Settings().store_url)


async def run_load(args: argparse.Namespace) -> int:
    from tally.store import StoreError, open_store

    try:
        price_list = read_price_list(args.file)
    except PriceListError as exc:
        print(f"tally price-list load: {args.file}: {exc}", file=sys.stderr)
        return 2
    versions = [(v.effective_from, version_document(v)) for v in price_list.versions]
    try:
        async with open_store(_store_url(args)) as store:
            await store.put_price_list(price_list.name, price_list.currency, versions)
    except StoreError as exc:
        print(f"tally price-list load: {args.file}: {exc}", file=sys.stderr)
        return 2
    print("\n".join(["loaded", *summary(price_list)]))
    return 0


async def run_list(args: argparse.Namespace) -> int:
    from tally.store import StoreError, open_store

    try:
        async with open_store(_store_url(args)) as store:
            stored = await store.list_price_lists()
    except StoreError as exc:
        print(f"tally price-list list: {exc}", file=sys.stderr)
        return 2
    for item in stored:
        print(f"{item.name}: {item.currency}")
        for v in item.versions:
            print(f"  from {format_instant(v.effective_from)} (loaded {format_instant(v.loaded_at)})")
    return 0
