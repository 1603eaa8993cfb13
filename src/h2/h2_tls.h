/* h2_tls: the server's TLS context: TLS 1.2+ with h2's cipher suites, ALPN
 * h2 (and http/1.1 with a fallback), optional client certificates, session resumption. */
#ifndef AGENTHUB_H2_TLS_H
#define AGENTHUB_H2_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>

#include "h2/h2.h"

/* The TLS 1.2 cipher list: ECDHE key exchange with AES-GCM or
 * ChaCha20-Poly1305 only (what RFC 9113 appendix A leaves for h2). */
#define H2_TLS12_CIPHERS                                                                           \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                                   \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                                   \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/* Builds a context from TLS's files.  Returns NULL with a reason in ERR
 * (which file failed to load). */
SSL_CTX *h2_tls_context_new(const struct h2_tls_config *tls, char *err, size_t err_size);

/* Offers ALPN "http/1.1" besides "h2" (preferred), for a listener with a
 * fallback. */
void h2_tls_offer_http1(SSL_CTX *ctx);

#endif
