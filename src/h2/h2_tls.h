/* h2_tls: the server's TLS context: TLS 1.2+, ALPN h2 only, optional
 * client certificates. */
#ifndef AGENTHUB_H2_TLS_H
#define AGENTHUB_H2_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>

#include "h2/h2.h"

/* Builds a context from TLS's files.  Returns NULL with a reason in ERR
 * (which file failed to load). */
SSL_CTX *h2_tls_context_new(const struct h2_tls_config *tls, char *err, size_t err_size);

#endif
