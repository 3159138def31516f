"""Where S3 credentials come from: the standard AWS chain, and nothing snapstore keeps.

snapstore never stores or prints a credential. The command line takes static
keys from the environment when they are there (fast: nothing more is imported);
otherwise botocore resolves the rest of AWS's standard chain, exactly as the AWS
CLI does: the shared credentials and config files (profiles, SSO,
``credential_process``, assumed roles), web identity, the container's and the
instance's role. botocore is imported only then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from .errors import RemoteDenied, client_missing

if TYPE_CHECKING:
    from obstore.store import S3Credential

_REFRESH = timedelta(minutes=5)  # how long a temporary credential is reused before asking again


@dataclass(frozen=True)
class S3Credentials:
    """Static keys. The secret never shows in a repr, a log or an error."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)


def from_environment(environ: Mapping[str, str]) -> S3Credentials | None:
    """The keys in ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` (and a session token),
    or None when the mapping does not hold both; the chain is then :class:`AwsChain`."""
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    return S3Credentials(key, secret, environ.get("AWS_SESSION_TOKEN") or None)


def region_from_environment(environ: Mapping[str, str]) -> str | None:
    return environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or None


class AwsChain:
    """AWS's standard credential chain, resolved by botocore on first use."""

    def __init__(self, profile: str | None = None):
        self.profile = profile
        self._credentials: Any = None
        self.region: str | None = None

    def resolve(self, remote: str) -> None:
        """Find credentials now, so a missing one is reported before any request."""
        try:
            import botocore.exceptions
            import botocore.session
        except ModuleNotFoundError as exc:
            raise client_missing(exc, ("botocore",)) from None

        try:
            session = botocore.session.Session(profile=self.profile)
            credentials = session.get_credentials()
            self.region = session.get_config_variable("region")
        except botocore.exceptions.BotoCoreError as exc:
            raise RemoteDenied("no usable AWS credentials", remote=remote, detail=str(exc)) from exc
        if credentials is None:
            raise RemoteDenied(
                "no AWS credentials found (environment, profile or instance role)", remote=remote
            )
        self._credentials = credentials

    def __call__(self) -> S3Credential:
        """The obstore credential-provider callback; botocore refreshes expiring ones."""
        frozen = self._credentials.get_frozen_credentials()
        refreshable = hasattr(self._credentials, "refresh_needed")
        return {
            "access_key_id": frozen.access_key,
            "secret_access_key": frozen.secret_key,
            "token": frozen.token,
            "expires_at": datetime.now(timezone.utc) + _REFRESH if refreshable else None,
        }
