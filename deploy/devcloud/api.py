"""A small JSON-over-HTTP client for the bootstrap: a keystone token, then plain requests with it.

The standard library suffices (the bootstrap makes a few dozen requests), so this runs under any
Python 3.11 without the services' virtualenv on the path.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from .errors import DevcloudError

TIMEOUT_S = 60.0


class Answer:
    def __init__(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.status = status
        self.body = body
        self.headers = headers

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def request(
    method: str, url: str, *, token: str | None = None, body: Any = None, raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:  # fmt: skip
    """One request; any HTTP status is answered, a connection failure raises OSError."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    sent = {"Accept": "application/json", **(headers or {})}
    if body is not None:
        sent["Content-Type"] = "application/json"
    if token is not None:
        sent["X-Auth-Token"] = token
    req = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return Answer(resp.status, resp.read(), dict(resp.headers))
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.read(), dict(error.headers))


def expect(answer: Answer, what: str, *codes: int) -> Any:
    if answer.status not in codes:
        raise DevcloudError(f"{what}: HTTP {answer.status}: {answer.body[:200].decode(errors='replace')}")
    return answer.json()


def password_token(auth_url: str, user: str, password: str, project: str) -> tuple[str, dict[str, Any]]:
    """A project-scoped token and its catalog-less token body."""
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {"user": {"name": user, "domain": {"id": "default"}, "password": password}},
            },
            "scope": {"project": {"name": project, "domain": {"id": "default"}}},
        }
    }
    answer = request("POST", f"{auth_url}/auth/tokens?nocatalog", body=body)
    token = expect(answer, f"a token for {user} from {auth_url}", 201)["token"]
    return answer.headers["X-Subject-Token"], token


def wait_http(url: str, deadline: float, alive: Any) -> None:
    """Poll ``url`` until it answers HTTP below 500; ``alive()`` false means its program died."""
    while True:
        try:
            if request("GET", url).status < 500:
                return
        except OSError:
            pass
        if not alive():
            raise DevcloudError(f"{url} did not come up: its program exited")
        if time.monotonic() > deadline:
            raise DevcloudError(f"{url} did not answer before the start's deadline")
        time.sleep(0.5)
