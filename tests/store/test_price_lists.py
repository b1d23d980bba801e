"""Price lists in the store: versions kept as loaded, none edited once in force, a list's currency fixed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tally.store import RuleViolation, Store

pytestmark = pytest.mark.anyio

JAN = datetime(2026, 1, 1, tzinfo=UTC)
MAR = datetime(2026, 3, 1, tzinfo=UTC)
MAY = datetime(2026, 5, 1, tzinfo=UTC)
NOW = datetime(2026, 4, 1, tzinfo=UTC)


def doc(at: datetime, vcpu: str) -> dict[str, object]:
    return {
        "effective_from": at.isoformat(),
        "types": {"instance": {"vcpu_hour": vcpu}},
        "minimum_seconds": 60,
    }


async def test_versions_read_back_in_order_with_their_documents(store: Store) -> None:
    await store.put_price_list("eu", "EUR", [(MAR, doc(MAR, "0.02")), (JAN, doc(JAN, "0.01"))], now=NOW)
    await store.put_price_list("ch", "CHF", [(JAN, doc(JAN, "0.03"))], now=NOW)
    stored = await store.get_price_list("eu")
    assert stored is not None and stored.currency == "EUR"
    assert [(v.effective_from, v.document) for v in stored.versions] == [
        (JAN, doc(JAN, "0.01")),
        (MAR, doc(MAR, "0.02")),
    ]
    assert stored.versions[0].loaded_at == NOW
    assert [p.name for p in await store.list_price_lists()] == ["ch", "eu"]
    assert await store.get_price_list("nope") is None


async def test_a_version_in_force_is_never_edited_and_nothing_changes(store: Store) -> None:
    await store.put_price_list("eu", "EUR", [(JAN, doc(JAN, "0.01")), (MAY, doc(MAY, "0.05"))], now=NOW)
    before = await store.get_price_list("eu")
    with pytest.raises(
        RuleViolation, match="changes the version from 2026-01-01T00:00:00Z, in force since then"
    ):
        await store.put_price_list("eu", "EUR", [(JAN, doc(JAN, "0.02"))], now=NOW)
    with pytest.raises(RuleViolation, match="leaves out the version from 2026-01-01T00:00:00Z"):
        await store.put_price_list("eu", "EUR", [(MAR, doc(MAR, "0.02"))], now=NOW)
    with pytest.raises(RuleViolation, match="price list eu is in EUR, not USD"):
        await store.put_price_list("eu", "USD", [(JAN, doc(JAN, "0.01"))], now=NOW)
    assert await store.get_price_list("eu") == before


async def test_a_new_version_supersedes_and_a_future_one_may_be_replaced(store: Store) -> None:
    await store.put_price_list("eu", "EUR", [(JAN, doc(JAN, "0.01")), (MAY, doc(MAY, "0.05"))], now=NOW)
    later = datetime(2026, 6, 1, tzinfo=UTC)
    await store.put_price_list("eu", "EUR", [(JAN, doc(JAN, "0.01")), (later, doc(later, "0.04"))], now=NOW)
    stored = await store.get_price_list("eu")
    assert stored is not None
    assert [(v.effective_from, v.document["types"]) for v in stored.versions] == [
        (JAN, {"instance": {"vcpu_hour": "0.01"}}),
        (later, {"instance": {"vcpu_hour": "0.04"}}),
    ]
    assert stored.versions[0].loaded_at == NOW  # the version in force is the row first loaded
