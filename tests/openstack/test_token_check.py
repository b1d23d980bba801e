"""Reading keystone's token document (``GET /v3/auth/tokens``): the scope, the roles, the expiry."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tally.openstack import KeystoneUnavailable
from tally.openstack._token_check import token_info


def test_a_project_token_names_its_project_domain_and_roles() -> None:
    info = token_info(
        {
            "token": {
                "user": {"id": "u1"},
                "project": {"id": "p1", "domain": {"id": "default"}},
                "roles": [{"id": "r", "name": "reader"}, {"id": "m", "name": "member"}],
                "expires_at": "2026-12-03T15:10:15.000000Z",
            }
        }
    )
    assert (info.user_id, info.project_id, info.project_domain_id, info.domain_id) == (
        "u1",
        "p1",
        "default",
        None,
    )
    assert info.roles == {"reader", "member"} and not info.system
    assert info.expires_at == datetime(2026, 12, 3, 15, 10, 15, tzinfo=UTC)


def test_a_domain_or_system_token_has_no_project() -> None:
    domain = token_info(
        {
            "token": {
                "user": {"id": "u"},
                "domain": {"id": "d1"},
                "roles": [],
                "expires_at": "2026-01-01T00:00:00Z",
            }
        }
    )
    assert (domain.project_id, domain.domain_id) == (None, "d1")
    system = token_info(
        {
            "token": {
                "user": {"id": "u"},
                "system": {"all": True},
                "roles": [],
                "expires_at": "2026-01-01T00:00:00Z",
            }
        }
    )
    assert system.system and system.project_id is None and system.domain_id is None


@pytest.mark.parametrize("document", [None, [], {"token": "x"}, {"token": {"user": {"id": "u"}}}])
def test_what_is_no_token_document_is_keystone_unavailable(document: object) -> None:
    with pytest.raises(KeystoneUnavailable):
        token_info(document)
