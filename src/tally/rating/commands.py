"""``tally price-list check FILE``: a price list checked, its versions summarized, or one refusal.

The refusal is one line naming the member at fault (``versions[0].types.instance.vcpu_hour: a YAML
float (0.01) where money belongs: quote it``) and the exit code is 2, so a pipeline can gate on it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tally.core import format_instant

from ._price_list import PriceList, PriceListError, load_price_list


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("price-list", help="check, load and list price lists")
    sub = parser.add_subparsers(dest="price_list_command", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="check a price list's YAML and summarize its versions")
    check.add_argument("file", help="the price list (YAML)")
    check.set_defaults(handler=run_check)


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
