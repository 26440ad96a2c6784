"""The TLS context of an HTTP client, built once per process (see `ssl_context_for`)."""

from __future__ import annotations

import os
import ssl

_verified_context: ssl.SSLContext | None = None
PROXY_VARS = ("https_proxy", "http_proxy", "all_proxy")


def ssl_context_for(base_url: str) -> ssl.SSLContext:
    """The TLS context a client for `base_url` needs, without paying for it twice.

    Building a verifying context loads the whole CA bundle (~0.1 s, more on a loaded
    machine), and every new client used to do it, although most appl endpoints are plain
    http:// servers on localhost. A plain-http endpoint (with no proxy configured in the
    environment) gets a context that has no CA loaded: no TLS is ever negotiated through
    it, and if it were, every certificate would be refused - nothing becomes less safe. An
    https endpoint gets one verifying context per process, built the way httpx builds it
    (SSL_CERT_FILE / SSL_CERT_DIR are honoured) and shared by all clients.
    """
    global _verified_context
    plain = base_url.lower().startswith("http://")
    if plain and not any(os.environ.get(v) or os.environ.get(v.upper()) for v in PROXY_VARS):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, but trusts no CA at all
    if _verified_context is None:
        import httpcore2  # only for https endpoints: plain-http programs never load it

        _verified_context = httpcore2.default_ssl_context()  # how httpx builds it
    return _verified_context
