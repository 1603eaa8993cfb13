/* h2_server: listeners, TLS and one nghttp2 session per connection. */
#include "h2/h2.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Stop pulling frames from nghttp2 while this much is unwritten; resume when
 * the socket drains below the low mark. */
#define OUTPUT_HIGH_WATER (256 * 1024)
#define OUTPUT_LOW_WATER  (64 * 1024)
#define STREAM_WINDOW     (1024 * 1024)
#define CONNECTION_WINDOW (16 * 1024 * 1024)

struct h2_conn;

struct h2_stream {
    struct h2_conn *conn;
    int32_t stream_id;
    void *data;
    size_t header_bytes;
    uint32_t reset_code; /* with reset_after_end: RST_STREAM once ended */
    int reset_after_end;
    int end_sent;
    struct h2_stream *prev, *next;
};

struct h2_listener {
    struct h2_server *server;
    char name[16];
    char address[80];
    struct evconnlistener *evlistener;
    SSL_CTX *ssl_ctx;
    struct h2_handler handler;
    void *listener_data;
    size_t connection_count;
    struct h2_listener *next;
};

struct h2_conn {
    struct h2_server *server;
    struct h2_listener *listener;
    struct bufferevent *bev;
    nghttp2_session *session;
    struct event *flush_event;
    struct event *idle_event;
    struct h2_stream *streams;
    size_t stream_count;
    int in_callback;   /* >0 while nghttp2 is calling us: never free then */
    int close_pending; /* close as soon as we are out of callbacks */
    int closing;       /* writing out a last GOAWAY; closes once it is sent */
    struct h2_conn *prev, *next;
};

struct h2_server {
    struct event_base *base;
    struct h2_limits limits;
    struct h2_listener *listeners;
    struct h2_conn *conns;
    int draining;
    struct timeval idle_timeout;
    struct h2_stats stats;
};

static int conn_flush(struct h2_conn *conn);
static void conn_close(struct h2_conn *conn);

/* --- nghttp2 callbacks --------------------------------------------------- */

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream;

    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    stream = calloc(1, sizeof(*stream));
    if (!stream)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    stream->conn = conn;
    stream->stream_id = frame->hd.stream_id;
    stream->data = conn->listener->handler.stream_open(conn->listener->listener_data, stream);
    if (!stream->data) {
        free(stream);
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                  NGHTTP2_REFUSED_STREAM);
        return 0;
    }
    stream->next = conn->streams;
    if (conn->streams)
        conn->streams->prev = stream;
    conn->streams = stream;
    conn->stream_count++;
    conn->server->stats.streams_open++;
    conn->server->stats.streams_total++;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, stream);
    return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream;

    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* client trailers carry nothing gRPC uses */
    stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!stream)
        return 0;
    /* RFC 9113 section 6.5.2 size: name + value + 32 per field. */
    stream->header_bytes += namelen + valuelen + 32;
    if (stream->header_bytes > conn->server->limits.max_header_list_bytes)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (conn->listener->handler.stream_header(stream->data, name, namelen, value, valuelen) != 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream;

    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!stream)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        conn->listener->handler.stream_headers_done(stream->data);
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        conn->listener->handler.stream_end(stream->data);
    return 0;
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    struct h2_stream *stream;

    if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ||
        (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA))
        return 0;
    stream = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!stream)
        return 0;
    stream->end_sent = 1;
    if (stream->reset_after_end)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->stream_id,
                                  stream->reset_code);
    return 0;
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                              const uint8_t *data, size_t len, void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream = nghttp2_session_get_stream_user_data(session, stream_id);

    if (stream)
        conn->listener->handler.stream_data(stream->data, data, len);
    return 0;
}

static void stream_unlink_and_free(struct h2_conn *conn, struct h2_stream *stream,
                                   uint32_t error_code)
{
    if (stream->prev)
        stream->prev->next = stream->next;
    else
        conn->streams = stream->next;
    if (stream->next)
        stream->next->prev = stream->prev;
    conn->stream_count--;
    conn->server->stats.streams_open--;
    conn->listener->handler.stream_close(stream->data, error_code);
    free(stream);
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream = nghttp2_session_get_stream_user_data(session, stream_id);

    if (!stream)
        return 0;
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    stream_unlink_and_free(conn, stream, error_code);
    return 0;
}

static ssize_t on_data_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *data_flags, nghttp2_data_source *source,
                            void *user_data)
{
    struct h2_conn *conn = user_data;
    struct h2_stream *stream = source->ptr;
    uint32_t flags = 0;
    ssize_t n;

    n = conn->listener->handler.stream_read(stream->data, buf, length, &flags);
    if (n == H2_READ_DEFERRED)
        return NGHTTP2_ERR_DEFERRED;
    if (n < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (flags & H2_READ_EOF)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    return n;
}

/* --- Stream API ---------------------------------------------------------- */

static nghttp2_nv *headers_to_nv(const struct h2_header *headers, size_t count, nghttp2_nv *stack,
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

static void conn_schedule_flush(struct h2_conn *conn)
{
    event_active(conn->flush_event, EV_WRITE, 0);
}

int h2_stream_respond(struct h2_stream *stream, const struct h2_header *headers, size_t count,
                      int has_body)
{
    nghttp2_nv stack[16];
    nghttp2_nv *nv = headers_to_nv(headers, count, stack, 16);
    nghttp2_data_provider provider;
    int rv;

    if (!nv)
        return -1;
    provider.source.ptr = stream;
    provider.read_callback = on_data_read;
    rv = nghttp2_submit_response(stream->conn->session, stream->stream_id, nv, count,
                                 has_body ? &provider : NULL);
    if (nv != stack)
        free(nv);
    if (rv != 0)
        return -1;
    conn_schedule_flush(stream->conn);
    return 0;
}

int h2_stream_trailers(struct h2_stream *stream, const struct h2_header *headers, size_t count)
{
    nghttp2_nv stack[16];
    nghttp2_nv *nv = headers_to_nv(headers, count, stack, 16);
    int rv;

    if (!nv)
        return -1;
    rv = nghttp2_submit_trailer(stream->conn->session, stream->stream_id, nv, count);
    if (nv != stack)
        free(nv);
    if (rv != 0)
        return -1;
    conn_schedule_flush(stream->conn);
    return 0;
}

void h2_stream_resume(struct h2_stream *stream)
{
    nghttp2_session_resume_data(stream->conn->session, stream->stream_id);
    conn_schedule_flush(stream->conn);
}

void h2_stream_reset(struct h2_stream *stream, uint32_t error_code)
{
    nghttp2_submit_rst_stream(stream->conn->session, NGHTTP2_FLAG_NONE, stream->stream_id,
                              error_code);
    conn_schedule_flush(stream->conn);
}

void h2_stream_reset_after_end(struct h2_stream *stream, uint32_t error_code)
{
    if (stream->end_sent) {
        h2_stream_reset(stream, error_code);
        return;
    }
    stream->reset_after_end = 1;
    stream->reset_code = error_code;
}

const char *h2_stream_listener_name(const struct h2_stream *stream)
{
    return stream->conn->listener->name;
}

size_t h2_stream_connection_backlog(const struct h2_stream *stream)
{
    return evbuffer_get_length(bufferevent_get_output(stream->conn->bev));
}

/* --- Connections --------------------------------------------------------- */

static void conn_free(struct h2_conn *conn)
{
    struct h2_server *server = conn->server;

    /* nghttp2_session_del does not report open streams: tell the handler. */
    for (struct h2_stream *stream = conn->streams, *next; stream; stream = next) {
        next = stream->next;
        nghttp2_session_set_stream_user_data(conn->session, stream->stream_id, NULL);
        stream_unlink_and_free(conn, stream, NGHTTP2_CANCEL);
    }
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        server->conns = conn->next;
    if (conn->next)
        conn->next->prev = conn->prev;
    conn->listener->connection_count--;
    server->stats.connections_open--;
    nghttp2_session_del(conn->session);
    event_free(conn->flush_event);
    event_free(conn->idle_event);
    bufferevent_free(conn->bev);
    free(conn);
}

static void conn_close(struct h2_conn *conn)
{
    if (conn->in_callback) {
        conn->close_pending = 1;
        return;
    }
    conn_free(conn);
}

/* How long a closing connection may take to write its last frames. */
#define CLOSE_LINGER_MS 1000

/* Closes once the bytes already in the socket buffer (a GOAWAY, usually)
 * are written: bufferevent_free would drop them.  Reads stop now. */
static void conn_close_after_write(struct h2_conn *conn)
{
    struct timeval linger = {CLOSE_LINGER_MS / 1000, (CLOSE_LINGER_MS % 1000) * 1000};

    if (evbuffer_get_length(bufferevent_get_output(conn->bev)) == 0) {
        conn_close(conn);
        return;
    }
    conn->closing = 1;
    bufferevent_disable(conn->bev, EV_READ);
    event_add(conn->idle_event, &linger); /* on_idle frees it if the peer never reads */
}

/* Moves frames from nghttp2 into the socket buffer, stopping at the high
 * water mark.  Closes the connection when neither side has more to say.
 * Returns 0, or -1 when the connection was freed. */
static int conn_flush(struct h2_conn *conn)
{
    struct evbuffer *out = bufferevent_get_output(conn->bev);

    conn->in_callback++;
    while (evbuffer_get_length(out) < OUTPUT_HIGH_WATER) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(conn->session, &data);
        if (n < 0) {
            conn->close_pending = 1;
            break;
        }
        if (n == 0)
            break;
        conn->server->stats.bytes_out += (uint64_t)n;
        if (evbuffer_add(out, data, (size_t)n) != 0) {
            conn->close_pending = 1;
            break;
        }
    }
    conn->in_callback--;
    if (!conn->close_pending && !nghttp2_session_want_read(conn->session) &&
        !nghttp2_session_want_write(conn->session) && evbuffer_get_length(out) == 0)
        conn->close_pending = 1;
    if (conn->close_pending && !conn->in_callback) {
        conn_free(conn);
        return -1;
    }
    return 0;
}

static void on_flush_event(evutil_socket_t fd, short what, void *arg)
{
    (void)conn_flush(arg);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct h2_conn *conn = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    struct evbuffer_iovec vec[8];
    int count;

    if (conn->closing) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    conn->in_callback++;
    while ((count = evbuffer_peek(in, -1, NULL, vec, 8)) > 0) {
        size_t total = 0;
        for (int i = 0; i < count && i < 8; i++) {
            ssize_t n = nghttp2_session_mem_recv(conn->session, vec[i].iov_base, vec[i].iov_len);
            if (n < 0) {
                conn->close_pending = 1;
                break;
            }
            total += (size_t)n;
        }
        conn->server->stats.bytes_in += total;
        evbuffer_drain(in, total);
        if (conn->close_pending)
            break;
    }
    conn->in_callback--;
    if (conn->close_pending) {
        /* Let nghttp2 say GOAWAY when it has one queued, then close. */
        conn->close_pending = 0;
        if (conn_flush(conn) == 0)
            conn_close_after_write(conn);
        return;
    }
    event_add(conn->idle_event, &conn->server->idle_timeout); /* re-arm on activity */
    conn_flush(conn);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct h2_conn *conn = arg;

    /* The socket drained below the low water mark. */
    if (conn->closing) {
        if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
            conn_close(conn);
        return;
    }
    conn_flush(conn);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct h2_conn *conn = arg;

    if (events & BEV_EVENT_CONNECTED) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        const unsigned char *alpn = NULL;
        unsigned int alpn_len = 0;
        if (ssl)
            SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
        if (ssl && (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0)) {
            conn_close(conn);
            return;
        }
        conn_flush(conn);
        return;
    }
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        conn_close(conn);
}

static void on_idle(evutil_socket_t fd, short what, void *arg)
{
    struct h2_conn *conn = arg;

    if (conn->closing) { /* the peer never read its GOAWAY */
        conn_close(conn);
        return;
    }
    if (conn->stream_count > 0) {
        event_add(conn->idle_event, &conn->server->idle_timeout);
        return;
    }
    nghttp2_submit_goaway(conn->session, NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(conn->session), NGHTTP2_NO_ERROR,
                          (const uint8_t *)"idle", 4);
    if (conn_flush(conn) == 0)
        conn_close_after_write(conn);
}

static int conn_setup_session(struct h2_conn *conn)
{
    nghttp2_session_callbacks *callbacks;
    nghttp2_option *option;
    nghttp2_settings_entry settings[4];
    int rv;

    if (nghttp2_session_callbacks_new(&callbacks) != 0)
        return -1;
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, on_frame_send);
    if (nghttp2_option_new(&option) != 0) {
        nghttp2_session_callbacks_del(callbacks);
        return -1;
    }
    nghttp2_option_set_no_closed_streams(option, 1);
    nghttp2_option_set_stream_reset_rate_limit(option, 1000, 33);
    nghttp2_option_set_max_settings(option, 32);
    rv = nghttp2_session_server_new2(&conn->session, callbacks, conn, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(callbacks);
    if (rv != 0)
        return -1;
    settings[0].settings_id = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS;
    settings[0].value = conn->server->limits.max_concurrent_streams;
    settings[1].settings_id = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE;
    settings[1].value = conn->server->limits.max_header_list_bytes;
    settings[2].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
    settings[2].value = STREAM_WINDOW;
    settings[3].settings_id = NGHTTP2_SETTINGS_ENABLE_PUSH;
    settings[3].value = 0;
    if (nghttp2_submit_settings(conn->session, NGHTTP2_FLAG_NONE, settings, 4) != 0)
        return -1;
    nghttp2_session_set_local_window_size(conn->session, NGHTTP2_FLAG_NONE, 0, CONNECTION_WINDOW);
    return 0;
}

static void on_accept(struct evconnlistener *evlistener, evutil_socket_t fd, struct sockaddr *addr,
                      int addrlen, void *arg)
{
    struct h2_listener *listener = arg;
    struct h2_server *server = listener->server;
    struct h2_conn *conn;
    int one = 1;

    if (server->draining || listener->connection_count >= server->limits.max_connections) {
        evutil_closesocket(fd);
        return;
    }
    conn = calloc(1, sizeof(*conn));
    if (!conn) {
        evutil_closesocket(fd);
        return;
    }
    conn->server = server;
    conn->listener = listener;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (listener->ssl_ctx) {
        SSL *ssl = SSL_new(listener->ssl_ctx);
        if (!ssl)
            goto fail_fd;
        conn->bev = bufferevent_openssl_socket_new(server->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                   BEV_OPT_CLOSE_ON_FREE);
        if (!conn->bev) {
            SSL_free(ssl);
            goto fail_fd;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(conn->bev, 1);
    } else {
        conn->bev = bufferevent_socket_new(server->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!conn->bev)
            goto fail_fd;
    }
    conn->flush_event = event_new(server->base, -1, 0, on_flush_event, conn);
    conn->idle_event = evtimer_new(server->base, on_idle, conn);
    if (!conn->flush_event || !conn->idle_event || conn_setup_session(conn) != 0)
        goto fail_bev;
    listener->connection_count++;
    server->stats.connections_open++;
    server->stats.connections_total++;
    conn->next = server->conns;
    if (server->conns)
        server->conns->prev = conn;
    server->conns = conn;
    event_add(conn->idle_event, &server->idle_timeout);
    bufferevent_setwatermark(conn->bev, EV_WRITE, OUTPUT_LOW_WATER, 0);
    bufferevent_setcb(conn->bev, on_read, on_write, on_event, conn);
    bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
    if (!listener->ssl_ctx)
        conn_flush(conn);
    return;

fail_bev:
    if (conn->session)
        nghttp2_session_del(conn->session);
    if (conn->flush_event)
        event_free(conn->flush_event);
    if (conn->idle_event)
        event_free(conn->idle_event);
    bufferevent_free(conn->bev);
    free(conn);
    return;
fail_fd:
    evutil_closesocket(fd);
    free(conn);
}

/* --- TLS ----------------------------------------------------------------- */

static int on_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg)
{
    int rv = nghttp2_select_next_protocol((unsigned char **)out, outlen, in, inlen);
    if (rv != 1)
        return SSL_TLSEXT_ERR_ALERT_FATAL; /* no "h2" offered */
    return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *tls_context_new(const struct h2_tls_config *tls, char *err, size_t err_size)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (!ctx) {
        snprintf(err, err_size, "cannot create a TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
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

/* --- Server and listeners ------------------------------------------------ */

struct h2_server *h2_server_new(struct event_base *base, const struct h2_limits *limits)
{
    struct h2_server *server = calloc(1, sizeof(*server));

    if (!server)
        return NULL;
    server->base = base;
    server->limits = *limits;
    server->idle_timeout.tv_sec = limits->idle_timeout_ms / 1000;
    server->idle_timeout.tv_usec = (limits->idle_timeout_ms % 1000) * 1000;
    return server;
}

void h2_server_free(struct h2_server *server)
{
    if (!server)
        return;
    while (server->conns)
        conn_free(server->conns);
    while (server->listeners) {
        struct h2_listener *listener = server->listeners;
        server->listeners = listener->next;
        if (listener->evlistener)
            evconnlistener_free(listener->evlistener);
        if (listener->ssl_ctx)
            SSL_CTX_free(listener->ssl_ctx);
        free(listener);
    }
    free(server);
}

/* Splits "host:port" or "[v6]:port".  Returns 0 or -1. */
static int split_host_port(const char *host_port, char *host, size_t host_size, char *port,
                           size_t port_size)
{
    const char *colon;
    size_t host_len;

    if (host_port[0] == '[') {
        const char *close = strchr(host_port, ']');
        if (!close || close[1] != ':')
            return -1;
        host_len = (size_t)(close - host_port - 1);
        if (host_len >= host_size)
            return -1;
        memcpy(host, host_port + 1, host_len);
        colon = close + 1;
    } else {
        colon = strrchr(host_port, ':');
        if (!colon)
            return -1;
        host_len = (size_t)(colon - host_port);
        if (host_len >= host_size)
            return -1;
        memcpy(host, host_port, host_len);
    }
    host[host_len] = '\0';
    if (strlen(colon + 1) == 0 || strlen(colon + 1) >= port_size)
        return -1;
    memcpy(port, colon + 1, strlen(colon + 1) + 1);
    return 0;
}

struct h2_listener *h2_listen(struct h2_server *server, const char *name, const char *host_port,
                              const struct h2_tls_config *tls, const struct h2_handler *handler,
                              void *listener_data, char *err, size_t err_size)
{
    char host[64], port[16];
    struct addrinfo hints, *res = NULL;
    struct h2_listener *listener;
    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof(bound);
    char ip[INET6_ADDRSTRLEN];
    int rv;

    if (split_host_port(host_port, host, sizeof(host), port, sizeof(port)) != 0) {
        snprintf(err, err_size, "%s: expected HOST:PORT", host_port);
        return NULL;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    rv = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (rv != 0) {
        snprintf(err, err_size, "%s: %s", host_port, gai_strerror(rv));
        return NULL;
    }
    listener = calloc(1, sizeof(*listener));
    if (!listener) {
        freeaddrinfo(res);
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    listener->server = server;
    snprintf(listener->name, sizeof(listener->name), "%s", name);
    listener->handler = *handler;
    listener->listener_data = listener_data;
    if (tls && tls->cert_file) {
        listener->ssl_ctx = tls_context_new(tls, err, err_size);
        if (!listener->ssl_ctx)
            goto fail;
    }
    listener->evlistener =
        evconnlistener_new_bind(server->base, on_accept, listener,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                1024, res->ai_addr, (int)res->ai_addrlen);
    if (!listener->evlistener) {
        snprintf(err, err_size, "%s: cannot listen: %s", host_port, strerror(errno));
        goto fail;
    }
    memset(&bound, 0, sizeof(bound));
    getsockname(evconnlistener_get_fd(listener->evlistener), (struct sockaddr *)&bound, &bound_len);
    if (bound.ss_family == AF_INET6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&bound;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        snprintf(listener->address, sizeof(listener->address), "[%s]:%u", ip,
                 ntohs(in6->sin6_port));
    } else {
        struct sockaddr_in *in4 = (struct sockaddr_in *)&bound;
        inet_ntop(AF_INET, &in4->sin_addr, ip, sizeof(ip));
        snprintf(listener->address, sizeof(listener->address), "%s:%u", ip, ntohs(in4->sin_port));
    }
    freeaddrinfo(res);
    listener->next = server->listeners;
    server->listeners = listener;
    return listener;
fail:
    freeaddrinfo(res);
    if (listener->ssl_ctx)
        SSL_CTX_free(listener->ssl_ctx);
    free(listener);
    return NULL;
}

const char *h2_listener_address(const struct h2_listener *listener)
{
    return listener->address;
}

void h2_server_drain(struct h2_server *server)
{
    struct h2_conn *conn, *next;

    server->draining = 1;
    for (struct h2_listener *l = server->listeners; l; l = l->next)
        if (l->evlistener)
            evconnlistener_disable(l->evlistener);
    for (conn = server->conns; conn; conn = next) {
        next = conn->next;
        nghttp2_submit_goaway(conn->session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(conn->session),
                              NGHTTP2_NO_ERROR, NULL, 0);
        conn_flush(conn);
    }
}

size_t h2_server_connection_count(const struct h2_server *server)
{
    return (size_t)server->stats.connections_open;
}

const struct h2_stats *h2_server_stats(const struct h2_server *server)
{
    return &server->stats;
}
