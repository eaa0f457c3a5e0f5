"""The body of a served spec: ``URL[,URL...][#MODEL[@REVISION]]``.

Each URL is a replica's OpenAI-compatible base (``http(s)://HOST:PORT/v1``); requests are
spread over them. MODEL is the server's model id (without it, the only id ``/v1/models``
lists); REVISION is what the user says the weights are (a hub commit, a training run's tag),
the only thing that tells two models served under one id apart. URLs are never globbed nor
looked up as local files. A URL carrying credentials (``user:password@``) is refused, shown
without them: a spec is written to reports, so a secret goes in ``--vl-api-key-env``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from pytest_vlcheck.errors import ModelSpecError

SCHEMES = ("http://", "https://")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.@+-]")


def is_served(body: str) -> bool:
    """Whether a ``vqa:`` body names a server rather than a hub name or a folder."""
    return body.strip().lower().startswith(SCHEMES)


@dataclass(frozen=True)
class Replica:
    """One base URL, as requests are sent to it and messages show it."""

    base: str


@dataclass(frozen=True)
class Endpoint:
    """The replicas, the model id the user named (None: ask the server) and the revision."""

    replicas: tuple[Replica, ...]
    model: str | None
    revision: str | None

    @property
    def shown(self) -> str:
        """The replicas as messages print them (no credentials)."""
        return ",".join(r.base for r in self.replicas)


def parse_endpoint(body: str) -> Endpoint:
    """Split a served body; one line for an empty URL, model or revision."""
    urls, _, named = body.strip().partition("#")
    model, at, revision = named.rpartition("@") if "@" in named else (named, "", "")
    replicas = tuple(_replica(url.strip(), body) for url in urls.split(","))
    if "#" in body and not model.strip():
        raise ModelSpecError(f"vqa:{_hidden(body)}: nothing after '#'; expected #MODEL[@REVISION]")
    if at and not revision.strip():
        raise ModelSpecError(
            f"vqa:{_hidden(body)}: nothing after '@'; expected #MODEL@REVISION (a commit, a tag)"
        )
    return Endpoint(replicas, model.strip() or None, revision.strip() or None)


def default_name(body: str) -> str:
    """The column name without ``NAME=``: the model id, else the first replica's host:port."""
    try:
        endpoint = parse_endpoint(body)
    except ModelSpecError:
        return "served"
    if endpoint.model:
        return _NOT_IN_NAME.sub("-", endpoint.model)
    netloc = urlsplit(endpoint.replicas[0].base).netloc
    return _NOT_IN_NAME.sub("-", netloc) or "served"


def _replica(url: str, body: str) -> Replica:
    if not is_served(url):
        raise ModelSpecError(
            f"vqa:{_hidden(body)}: {_hidden(url) or 'an empty URL'} is no http(s) URL; "
            "expected comma-separated base URLs such as http://HOST:PORT/v1"
        )
    parts = urlsplit(url)
    if not parts.hostname:
        raise ModelSpecError(
            f"vqa:{_hidden(body)}: {_hidden(url)} names no host; expected http://HOST:PORT/v1"
        )
    if "@" in parts.netloc:
        raise ModelSpecError(
            f"vqa:{_hidden(body)}: {_hidden(url)} carries credentials; a spec is written to "
            "reports, so expected a URL without them and the API key in the environment "
            "variable named by --vl-api-key-env"
        )
    return Replica(urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", "")))


def hide_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it replaced by ``***@``."""
    return re.sub(r"(https?://)[^/@\s,#]*@", r"\1***@", text)


_hidden = hide_credentials
