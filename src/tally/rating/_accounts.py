"""Billing accounts: whom a project's charges are invoiced to, at each instant. Pure.

The project registry says it: a relation of type ``billing_account`` from a project to another
(the account, whose external id and name the FOCUS export writes) puts the project under that
account for the relation's validity. A project with none is its own billing account. A project
that moves between accounts inside a period has its usage cut at the instant it moved
(``cuts``), so each line bills one account.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

RELATION_TYPE = "billing_account"
ProjectRef = tuple[str, str]  # (cloud, external project id)


@dataclass(frozen=True, slots=True)
class Account:
    """A FOCUS billing account: its id, display name, and type (``BillingAccountType``)."""

    id: str
    name: str
    type: str


@dataclass(frozen=True, slots=True)
class AccountSpan:
    """``project`` is under ``account`` from ``valid_from`` until ``valid_to`` (None: still)."""

    project: ProjectRef
    account: Account
    valid_from: datetime
    valid_to: datetime | None


class BillingAccounts:
    """The account of each project at each instant, and the projects' display names."""

    def __init__(self, names: Mapping[ProjectRef, str | None], spans: Iterable[AccountSpan]) -> None:
        self._names = dict(names)
        self._spans: dict[ProjectRef, list[AccountSpan]] = {}
        for span in sorted(spans, key=lambda s: s.valid_from):
            self._spans.setdefault(span.project, []).append(span)

    def project_name(self, project: ProjectRef) -> str:
        return self._names.get(project) or project[1]

    def account_at(self, project: ProjectRef, at: datetime) -> Account:
        """The account ``project`` is billed to at ``at``: its relation's, else the project itself."""
        for span in self._spans.get(project, ()):
            if span.valid_from <= at and (span.valid_to is None or at < span.valid_to):
                return span.account
        return Account(project[1], self.project_name(project), "Project")

    def cuts(self) -> list[datetime]:
        """Every instant a project enters or leaves an account: where rated lines are cut."""
        instants: set[datetime] = set()
        for spans in self._spans.values():
            for span in spans:
                instants.add(span.valid_from)
                if span.valid_to is not None:
                    instants.add(span.valid_to)
        return sorted(instants)
