/* h2_tls: see h2_tls.h. */
#include "h2/h2_tls.h"

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <stdio.h>

#define SESSION_ID_CONTEXT "agenthubd"

static int on_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg)
{
    int rv = nghttp2_select_next_protocol((unsigned char **)out, outlen, in, inlen);
    if (rv != 1)
        return SSL_TLSEXT_ERR_ALERT_FATAL; /* no "h2" offered */
    return SSL_TLSEXT_ERR_OK;
}

/* With a fallback for HTTP/1.1: "h2" when the client offers it, else
 * "http/1.1"; a client offering neither is refused. */
static int on_alpn_select_http1(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                const unsigned char *in, unsigned int inlen, void *arg)
{
    static const unsigned char http1[] = "\x08http/1.1";

    if (nghttp2_select_next_protocol((unsigned char **)out, outlen, in, inlen) == 1)
        return SSL_TLSEXT_ERR_OK;
    if (SSL_select_next_proto((unsigned char **)out, outlen, http1, sizeof(http1) - 1, in, inlen) ==
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

void h2_tls_offer_http1(SSL_CTX *ctx)
{
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn_select_http1, NULL);
}

SSL_CTX *h2_tls_context_new(const struct h2_tls_config *tls, char *err, size_t err_size)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (!ctx) {
        snprintf(err, err_size, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* TLS 1.2 suites HTTP/2 allows (RFC 9113 appendix A forbids every
     * non-AEAD and non-ephemeral one, CBC above all).  TLS 1.3 suites are
     * all AEAD. */
    if (SSL_CTX_set_cipher_list(ctx, H2_TLS12_CIPHERS) != 1) {
        snprintf(err, err_size, "cannot set the TLS 1.2 cipher list");
        goto fail;
    }
    /* Resumed sessions must be tied to this context, or OpenSSL refuses to
     * resume any session when client certificates are verified. */
    if (SSL_CTX_set_session_id_context(ctx, (const unsigned char *)SESSION_ID_CONTEXT,
                                       sizeof(SESSION_ID_CONTEXT) - 1) != 1) {
        snprintf(err, err_size, "cannot set the TLS session id context");
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, tls->cert_file) != 1) {
        snprintf(err, err_size, "cannot load TLS certificate %s", tls->cert_file);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, tls->key_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, err_size, "cannot load TLS key %s (or it does not match the certificate)",
                 tls->key_file);
        goto fail;
    }
    if (tls->client_ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, tls->client_ca_file, NULL) != 1) {
            snprintf(err, err_size, "cannot load client CA %s", tls->client_ca_file);
            goto fail;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    }
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn_select, NULL);
    return ctx;
fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return NULL;
}

int h2_tls_check(const struct h2_tls_config *tls, char *err, size_t err_size)
{
    SSL_CTX *ctx = h2_tls_context_new(tls, err, err_size);

    if (!ctx)
        return -1;
    SSL_CTX_free(ctx);
    return 0;
}
