"""The price lists part of the shared SQL: versions of named lists, none edited once in force.

A role of the store over the dialect seam (see ``_sql_dialect``). The documents are the canonical
ones ``tally.rating`` writes (amounts as decimal texts), compared as JSON values, so a version is
"unchanged" when it prices the same, whatever the YAML's spelling was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tally.core import format_instant, utc_now

from ._interface import PriceListVersion, RuleViolation, StoredPriceList
from ._sql_dialect import SqlDialect

_SELECT = "SELECT name, effective_from, currency, document, loaded_at FROM price_list_versions"


class PricingSql:
    """Store methods of price lists; see the module docstring."""

    def __init__(self, sql: SqlDialect) -> None:
        # The seam's operations its statements call, bound once (no lookup through ``sql`` per call).
        self._fetch = sql.fetch
        self._tx = sql.tx
        self.from_js = sql.from_js
        self.from_ts = sql.from_ts
        self.js = sql.js
        self.ts = sql.ts

    def _price_lists(self, recs: Sequence[Sequence[Any]]) -> list[StoredPriceList]:
        lists: dict[str, tuple[str, list[PriceListVersion]]] = {}
        for name, effective_from, currency, document, loaded_at in recs:
            _, versions = lists.setdefault(name, (currency, []))
            versions.append(
                PriceListVersion(
                    self.from_ts(effective_from), self.from_js(document), self.from_ts(loaded_at)
                )
            )
        return [
            StoredPriceList(name, currency, tuple(versions)) for name, (currency, versions) in lists.items()
        ]

    async def get_price_list(self, name: str) -> StoredPriceList | None:
        recs = await self._fetch(f"{_SELECT} WHERE name = ? ORDER BY effective_from", (name,))
        found = self._price_lists(recs)
        return found[0] if found else None

    async def list_price_lists(self) -> list[StoredPriceList]:
        return self._price_lists(await self._fetch(f"{_SELECT} ORDER BY name, effective_from"))

    async def put_price_list(
        self,
        name: str,
        currency: str,
        versions: Sequence[tuple[datetime, Mapping[str, Any]]],
        *,
        now: datetime | None = None,
    ) -> StoredPriceList:
        now = utc_now() if now is None else now
        given = {at: dict(document) for at, document in versions}
        async with self._tx() as tx:
            recs = await tx.fetchall(
                "SELECT effective_from, currency, document FROM price_list_versions WHERE name = ? "
                "ORDER BY effective_from",
                (name,),
            )
            for stored_at, stored_currency, document in recs:
                at = self.from_ts(stored_at)
                if stored_currency != currency:
                    raise RuleViolation(f"price list {name} is in {stored_currency}, not {currency}")
                if at <= now and given.get(at) != self.from_js(document):
                    what = "changes" if at in given else "leaves out"
                    raise RuleViolation(
                        f"price list {name}: the document {what} the version from {format_instant(at)}, "
                        "in force since then and never edited: add a new version instead"
                    )
            await tx.execute(
                "DELETE FROM price_list_versions WHERE name = ? AND effective_from > ?", (name, self.ts(now))
            )
            await tx.executemany(
                "INSERT INTO price_list_versions (name, effective_from, currency, document, loaded_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (name, effective_from) DO NOTHING",
                [
                    (name, self.ts(at), currency, self.js(doc), self.ts(now))
                    for at, doc in sorted(given.items())
                ],
            )
        stored = await self.get_price_list(name)
        assert stored is not None  # written just above, in a committed transaction
        return stored
