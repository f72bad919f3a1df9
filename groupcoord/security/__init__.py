"""Authentication's pure parts: SASL mechanisms (PLAIN, SCRAM), stored credentials, principals and TLS contexts.

Nothing here touches a socket or the state root: the endpoint (:mod:`groupcoord.server.authentication`) drives the
SASL exchanges, and the coordinator stores the credentials as records.
"""
