"""Why an authentication failed, in two kinds as Kafka tells them apart."""

from __future__ import annotations


class AuthenticationFailed(Exception):
    """An authentication failure whose message the client may see (Kafka's ``SaslAuthenticationException``)."""


class InvalidCredentials(AuthenticationFailed):
    """Wrong or unknown credentials: the client only sees Kafka's generic "invalid credentials" message, so it
    cannot tell an unknown user from a wrong password (Kafka's ``SaslException``)."""
