"""The one gate between an unauthenticated connection and everything behind the endpoint.

On a SASL listener (SASL_PLAINTEXT, SASL_SSL) every connection starts unauthenticated, and :class:`SaslGate`
sees each request frame before anything decodes it beyond its first two bytes. As Kafka's
``SaslServerAuthenticator`` does:

- ApiVersions is answered (by the dispatcher's adapter, which reads no state);
- SaslHandshake picks a mechanism among ``sasl.enabled.mechanisms`` (UNSUPPORTED_SASL_MECHANISM otherwise, and the
  connection closes); v0 means the tokens then come as bare size-prefixed frames, v1 wraps them in SaslAuthenticate;
- SaslAuthenticate carries the tokens of the exchange; a failure answers SASL_AUTHENTICATION_FAILED (58) after
  ``connection.failed.authentication.delay.ms`` and closes the connection;
- any other request closes the connection without an answer (after the same delay).

Once the exchange completes, the connection's principal is ``User:NAME`` and the gate lets every frame through;
SaslHandshake and SaslAuthenticate then answer ILLEGAL_SASL_STATE (:class:`IllegalSaslStateAdapter`), as Kafka's
request handler does after authentication (and on listeners without SASL).

:class:`AuthenticationStats` counts successes and failures per mechanism for whoever reports them (the metrics
endpoint); failures are logged with the peer, the mechanism and the reason Kafka would log, never a token.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from groupcoord.protocol.errors import ErrorCode, Errors
from groupcoord.security.config import ListenerSecurity
from groupcoord.security.credentials import CredentialStore
from groupcoord.security.errors import AuthenticationFailed, InvalidCredentials
from groupcoord.security.principal import ANONYMOUS, user_principal
from groupcoord.security.sasl import SaslServer, sasl_server
from groupcoord.server.api import BrokerAddress, RequestContext
from groupcoord.server.codec import RequestRejected, decode_request, encode_response
from groupcoord.server.schema_apis import SchemaResponse
from groupcoord.server.versions import ApiKey, VersionRange

log = logging.getLogger("groupcoord.server.authentication")

PRE_AUTHENTICATION_KEYS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
"""The only API keys an unauthenticated SASL connection may send."""

_SIZE_BYTES = 4
_NO_BROKER = BrokerAddress("", 0, node_id=0)  # the SASL answers name no broker


class AuthenticationClosed(RequestRejected):
    """The connection closes because its authentication failed (the answer, if any, is written already)."""


@dataclass
class AuthenticationStats:
    """Authentication outcomes since the endpoint started (the metrics endpoint reads :attr:`failed`, from its own
    thread: a plain int, safe to read while the loop counts)."""

    successes: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    failed: int = 0
    """Failed authentications, every mechanism together (requests outside SASL included, as ``none``)."""

    def count_failure(self, mechanism: str | None) -> None:
        """One more failure of ``mechanism`` (``None``: before a mechanism was chosen)."""
        self.failures[mechanism or "none"] += 1
        self.failed += 1

    @property
    def succeeded(self) -> int:
        """Successful authentications, every mechanism together."""
        return sum(self.successes.values())


AnswerApiVersions = Callable[[bytes], Awaitable[bytes | None]]
"""The endpoint's own answer to an ApiVersions frame (the only other API served before authentication)."""


class SaslGate:
    """One connection's authentication state; :meth:`admit` is the only way a frame gets past it."""

    def __init__(self, security: ListenerSecurity, credentials: CredentialStore, stats: AuthenticationStats, *,
                 ranges: dict[ApiKey, VersionRange], peer: str) -> None:
        self._security = security
        self._credentials = credentials
        self._stats = stats
        self._ranges = {key: r for key, r in ranges.items() if key in PRE_AUTHENTICATION_KEYS}
        self._peer = peer
        self._mechanism: str | None = None
        self._server: SaslServer | None = None
        self._bare_tokens = False  # SaslHandshake v0: tokens without Kafka headers
        self.principal: str | None = None if security.sasl else ANONYMOUS

    @property
    def authenticated(self) -> bool:
        """Whether frames now pass to the dispatcher."""
        return self.principal is not None

    async def admit(self, payload: bytes, answer_api_versions: AnswerApiVersions) -> bytes | None:
        """The frame to write in answer to ``payload`` received before authentication completed.

        Raises :class:`AuthenticationClosed` when the connection must close (after the failure delay).
        """
        assert not self.authenticated
        if self._bare_tokens:
            return await self._bare_token(payload)
        api_key = int.from_bytes(payload[:2], "big", signed=True) if len(payload) >= 2 else -1
        if api_key == ApiKey.API_VERSIONS and self._server is None:
            return await answer_api_versions(payload)
        expected = ApiKey.SASL_HANDSHAKE if self._server is None else ApiKey.SASL_AUTHENTICATE
        if api_key != expected:
            await self._fail(None, f"unexpected request of API key {api_key} during SASL "
                             f"{'handshake' if self._server is None else 'authentication'}")
        request = decode_request(payload, ranges=self._ranges)
        ctx = RequestContext(request, _NO_BROKER)
        if expected == ApiKey.SASL_HANDSHAKE:
            return await self._handshake(ctx)
        return await self._authenticate(ctx)

    async def _handshake(self, ctx: RequestContext) -> bytes:
        mechanism = str(ctx.body.get("Mechanism", ""))
        enabled = list(self._security.mechanisms)
        if mechanism not in enabled:
            answer = ctx.response(ErrorCode=Errors.UNSUPPORTED_SASL_MECHANISM.code, Mechanisms=enabled)
            await self._fail(None, f"unsupported SASL mechanism {mechanism!r}", _frame(answer, ctx))
        self._mechanism = mechanism
        self._server = sasl_server(mechanism, self._credentials)
        self._bare_tokens = ctx.api_version == 0
        return _frame(ctx.response(ErrorCode=Errors.NONE.code, Mechanisms=enabled), ctx)

    async def _authenticate(self, ctx: RequestContext) -> bytes:
        token = bytes(ctx.body.get("AuthBytes") or b"")
        try:
            reply = self._evaluate(token)
        except AuthenticationFailed as exc:
            message = _client_message(exc, self._mechanism)
            answer = ctx.response(ErrorCode=Errors.SASL_AUTHENTICATION_FAILED.code, ErrorMessage=message)
            await self._fail(self._mechanism, str(exc), _frame(answer, ctx))
        return _frame(ctx.response(ErrorCode=Errors.NONE.code, AuthBytes=reply, SessionLifetimeMs=0), ctx)

    async def _bare_token(self, payload: bytes) -> bytes:
        try:
            reply = self._evaluate(payload)
        except AuthenticationFailed as exc:
            await self._fail(self._mechanism, str(exc))
        return len(reply).to_bytes(_SIZE_BYTES, "big") + reply

    def _evaluate(self, token: bytes) -> bytes:
        assert self._server is not None and self._mechanism is not None
        reply = self._server.evaluate(token)
        if self._server.complete and self._server.username is not None:
            self.principal = user_principal(self._server.username)
            self._stats.successes[self._mechanism] += 1
            log.debug("%s authenticated as %s with %s", self._peer, self.principal, self._mechanism)
        return reply

    async def _fail(self, mechanism: str | None, reason: str, answer: bytes | None = None) -> NoReturn:
        """Count and log the failure, wait the failure delay, write nothing yet: raise with ``answer`` attached."""
        self._stats.count_failure(mechanism)
        log.info("authentication of %s failed%s: %s", self._peer, f" with {mechanism}" if mechanism else "", reason)
        await asyncio.sleep(self._security.failed_authentication_delay_ms / 1000)
        raise AuthenticationFailedClose(reason, answer)


class AuthenticationFailedClose(AuthenticationClosed):
    """An authentication failure: ``answer`` (if any) is written, then the connection closes."""

    def __init__(self, reason: str, answer: bytes | None) -> None:
        super().__init__(reason)
        self.answer = answer


def _client_message(exc: AuthenticationFailed, mechanism: str | None) -> str:
    """What the client is told: Kafka's generic message for wrong credentials (so an unknown user and a wrong
    password look alike), the failure's own message otherwise."""
    if isinstance(exc, InvalidCredentials):
        return f"Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    return str(exc)


def _frame(response: SchemaResponse, ctx: RequestContext) -> bytes:
    return encode_response(response, correlation_id=ctx.request.header.correlation_id)


class IllegalSaslStateAdapter:
    """SaslHandshake or SaslAuthenticate on an authenticated connection, or on a listener without SASL: Kafka's
    request handler answers ILLEGAL_SASL_STATE."""

    async def handle(self, ctx: RequestContext) -> Any:
        """Always ILLEGAL_SASL_STATE."""
        return self.error_response(ctx, Errors.ILLEGAL_SASL_STATE)

    def error_response(self, ctx: RequestContext, error: ErrorCode) -> Any:
        """``error``, with no mechanisms or token."""
        if ctx.request.api_key == ApiKey.SASL_HANDSHAKE:
            return ctx.response(ErrorCode=error.code, Mechanisms=[])
        return ctx.response(ErrorCode=error.code, ErrorMessage="Unexpected SASL request after authentication"
                            if error is Errors.ILLEGAL_SASL_STATE else error.name)

