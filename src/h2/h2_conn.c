/* h2_conn: the connection pump both sides of h2 share: the socket's
 * bufferevent (plain or TLS), moving bytes between it and an nghttp2
 * session under the output high water mark, ALPN, and header lists. */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>

#include "h2/h2.h"
#include "h2/h2_internal.h"

/* h2.h names the error codes so the layers above need no nghttp2 header;
 * they must be nghttp2's own values. */
#define H2_SAME_CODE(name) ((int)H2_##name == (int)NGHTTP2_##name)
_Static_assert(H2_SAME_CODE(NO_ERROR) && H2_SAME_CODE(PROTOCOL_ERROR) &&
                   H2_SAME_CODE(INTERNAL_ERROR) && H2_SAME_CODE(REFUSED_STREAM) &&
                   H2_SAME_CODE(CANCEL) && H2_SAME_CODE(ENHANCE_YOUR_CALM) &&
                   H2_SAME_CODE(HTTP_1_1_REQUIRED),
               "h2 error codes differ from nghttp2's");
#undef H2_SAME_CODE

struct bufferevent *h2_pump_bev_new(struct event_base *base, evutil_socket_t fd, SSL *ssl,
                                    int accepting)
{
    struct bufferevent *bev;

    if (!ssl)
        return bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    bev = bufferevent_openssl_socket_new(
        base, fd, ssl, accepting ? BUFFEREVENT_SSL_ACCEPTING : BUFFEREVENT_SSL_CONNECTING,
        BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        SSL_free(ssl);
        return NULL;
    }
    /* Peers often close without close_notify; that is not an error here. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

int h2_pump_alpn_ok(struct bufferevent *bev)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;

    if (!ssl)
        return 1;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    return alpn_len == 2 && memcmp(alpn, "h2", 2) == 0;
}

int h2_pump_alpn_http1(struct bufferevent *bev)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    const unsigned char *alpn = NULL;
    unsigned int alpn_len = 0;

    if (!ssl)
        return 0;
    SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
    return alpn_len == 0 || (alpn_len == 8 && memcmp(alpn, "http/1.1", 8) == 0);
}

int h2_pump_recv(nghttp2_session *session, struct evbuffer *in, uint64_t *bytes_in)
{
    struct evbuffer_iovec vec[8];
    int count;

    while ((count = evbuffer_peek(in, -1, NULL, vec, 8)) > 0) {
        size_t total = 0;
        int failed = 0;
        for (int i = 0; i < count && i < 8; i++) {
            ssize_t n = nghttp2_session_mem_recv(session, vec[i].iov_base, vec[i].iov_len);
            if (n < 0) {
                failed = 1;
                break;
            }
            total += (size_t)n;
        }
        *bytes_in += total;
        evbuffer_drain(in, total);
        if (failed)
            return -1;
    }
    return 0;
}

int h2_pump_send(nghttp2_session *session, struct bufferevent *bev, uint64_t *bytes_out)
{
    struct evbuffer *out = bufferevent_get_output(bev);

    while (evbuffer_get_length(out) < H2_OUTPUT_HIGH_WATER) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(session, &data);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        *bytes_out += (uint64_t)n;
        if (evbuffer_add(out, data, (size_t)n) != 0)
            return -1;
    }
    return 0;
}

int h2_pump_finished(nghttp2_session *session)
{
    return !nghttp2_session_want_read(session) && !nghttp2_session_want_write(session);
}

nghttp2_nv *h2_headers_to_nv(const struct h2_header *headers, size_t count, nghttp2_nv *stack,
                             size_t stack_count)
{
    nghttp2_nv *nv = count <= stack_count ? stack : malloc(count * sizeof(*nv));
    if (!nv)
        return NULL;
    for (size_t i = 0; i < count; i++) {
        nv[i].name = (uint8_t *)headers[i].name;
        nv[i].namelen = headers[i].name_len;
        nv[i].value = (uint8_t *)headers[i].value;
        nv[i].valuelen = headers[i].value_len;
        nv[i].flags = NGHTTP2_NV_FLAG_NONE;
    }
    return nv;
}
