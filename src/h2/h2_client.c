/* h2_client: one nghttp2 client session per connection (see h2_client.h),
 * pumped by h2_conn.c like the server's. */
#include "h2/h2_client.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/hostport.h"
#include "h2/h2_internal.h"

/* The client's flow-control windows: larger than the server's (h2_server.c),
 * since a client reads one peer's replies (a Runner's command stream, a
 * subscriber's backlog) and has no receive budget to protect. */
#define CLIENT_STREAM_WINDOW     (4 * 1024 * 1024)
#define CLIENT_CONNECTION_WINDOW (64 * 1024 * 1024)

struct h2_client {
    struct event_base *base;
    struct bufferevent *bev;
    SSL_CTX *ssl_ctx;
    nghttp2_session *session;
    struct event *flush_event;
    struct h2_client_handler handler;
    void *client_data;
    uint64_t bytes_in, bytes_out;
    int connected;
    int broken;
};

static void client_break(struct h2_client *client, const char *why)
{
    if (client->broken)
        return;
    client->broken = 1;
    if (client->handler.connection_broken)
        client->handler.connection_broken(client->client_data, why);
}

/* --- nghttp2 callbacks --------------------------------------------------- */

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t name_len, const uint8_t *value, size_t value_len, uint8_t flags,
                     void *user_data)
{
    struct h2_client *client = user_data;
    void *stream_data = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);

    if (!stream_data)
        return 0;
    client->handler.stream_header(stream_data, frame->headers.cat == NGHTTP2_HCAT_HEADERS, name,
                                  name_len, value, value_len);
    return 0;
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                              const uint8_t *data, size_t len, void *user_data)
{
    struct h2_client *client = user_data;
    void *stream_data = nghttp2_session_get_stream_user_data(session, stream_id);

    if (stream_data)
        client->handler.stream_data(stream_data, data, len);
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    struct h2_client *client = user_data;
    void *stream_data = nghttp2_session_get_stream_user_data(session, stream_id);

    if (!stream_data)
        return 0;
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    client->handler.stream_close(stream_data, error_code);
    return 0;
}

static ssize_t on_data_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *data_flags, nghttp2_data_source *source,
                            void *user_data)
{
    struct h2_client *client = user_data;
    uint32_t flags = 0;
    ssize_t n = client->handler.stream_read(source->ptr, buf, length, &flags);

    if (n == H2_READ_DEFERRED)
        return NGHTTP2_ERR_DEFERRED;
    if (n < 0)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    if (flags & (H2_READ_EOF | H2_READ_EOF_END_STREAM))
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return n;
}

/* --- Connection ---------------------------------------------------------- */

static void client_flush(struct h2_client *client)
{
    if (!client->session || client->broken || !client->connected)
        return;
    if (h2_pump_send(client->session, client->bev, &client->bytes_out) != 0) {
        client_break(client, "HTTP/2 session error");
        return;
    }
    if (h2_pump_finished(client->session))
        client_break(client, "the server closed the connection");
}

static void on_flush_event(evutil_socket_t fd, short what, void *arg)
{
    client_flush(arg);
}

void h2_client_schedule_flush(struct h2_client *client)
{
    if (client->flush_event)
        event_active(client->flush_event, EV_WRITE, 0);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct h2_client *client = arg;

    if (client->broken)
        return;
    if (h2_pump_recv(client->session, bufferevent_get_input(bev), &client->bytes_in) != 0) {
        client_break(client, "malformed HTTP/2 from the server");
        return;
    }
    client_flush(client);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    client_flush(arg);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct h2_client *client = arg;
    char why[256];

    if (events & BEV_EVENT_CONNECTED) {
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (!h2_pump_alpn_ok(bev)) {
            client_break(client, "the server did not negotiate h2 over TLS");
            return;
        }
        client->connected = 1;
        client_flush(client);
        return;
    }
    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) {
        unsigned long ssl_error = bufferevent_get_openssl_error(bev);
        int socket_error = EVUTIL_SOCKET_ERROR();
        if (ssl_error)
            snprintf(why, sizeof(why), "TLS error: %s", ERR_reason_error_string(ssl_error));
        else if ((events & BEV_EVENT_ERROR) && socket_error)
            snprintf(why, sizeof(why), "connection failed: %s", strerror(socket_error));
        else
            snprintf(why, sizeof(why), "connection closed");
        client_break(client, why);
    }
}

/* Returns 0, or -1 when out of memory. */
static int session_setup(struct h2_client *client)
{
    nghttp2_session_callbacks *callbacks;
    nghttp2_settings_entry settings[2];
    int rv;

    if (nghttp2_session_callbacks_new(&callbacks) != 0)
        return -1;
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
    rv = nghttp2_session_client_new(&client->session, callbacks, client);
    nghttp2_session_callbacks_del(callbacks);
    if (rv != 0)
        return -1;
    settings[0].settings_id = NGHTTP2_SETTINGS_ENABLE_PUSH;
    settings[0].value = 0;
    settings[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE;
    settings[1].value = CLIENT_STREAM_WINDOW;
    if (nghttp2_submit_settings(client->session, NGHTTP2_FLAG_NONE, settings, 2) != 0)
        return -1;
    nghttp2_session_set_local_window_size(client->session, NGHTTP2_FLAG_NONE, 0,
                                          CLIENT_CONNECTION_WINDOW);
    return 0;
}

/* The TLS context and one SSL for HOST.  Returns the SSL, or NULL with the
 * reason (the file that did not load) in ERR. */
static SSL *tls_setup(struct h2_client *client, const struct h2_client_options *options,
                      const char *host, char *err, size_t err_size)
{
    static const unsigned char alpn[] = "\x02h2";
    const char *name = options->server_name ? options->server_name : host;
    SSL *ssl;

    client->ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (!client->ssl_ctx)
        goto fail;
    SSL_CTX_set_min_proto_version(client->ssl_ctx, TLS1_2_VERSION);
    if (options->ca_file) {
        if (SSL_CTX_load_verify_locations(client->ssl_ctx, options->ca_file, NULL) != 1) {
            snprintf(err, err_size, "cannot load CA file %s", options->ca_file);
            return NULL;
        }
    } else {
        SSL_CTX_set_default_verify_paths(client->ssl_ctx);
    }
    if (options->cert_file &&
        (SSL_CTX_use_certificate_chain_file(client->ssl_ctx, options->cert_file) != 1 ||
         SSL_CTX_use_PrivateKey_file(client->ssl_ctx, options->key_file, SSL_FILETYPE_PEM) != 1)) {
        snprintf(err, err_size, "cannot load client certificate %s", options->cert_file);
        return NULL;
    }
    SSL_CTX_set_verify(client->ssl_ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_alpn_protos(client->ssl_ctx, alpn, sizeof(alpn) - 1);
    ssl = SSL_new(client->ssl_ctx);
    if (!ssl)
        goto fail;
    SSL_set_tlsext_host_name(ssl, name);
    SSL_set1_host(ssl, name);
    return ssl;
fail:
    snprintf(err, err_size, "cannot set up TLS");
    return NULL;
}

struct h2_client *h2_client_new(struct event_base *base, const char *host_port,
                                const struct h2_client_options *options,
                                const struct h2_client_handler *handler, void *client_data,
                                char *err, size_t err_size)
{
    struct h2_client *client = calloc(1, sizeof(*client));
    struct addrinfo hints, *res = NULL;
    char host[200], port[16];
    int rv;

    if (!client) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    client->base = base;
    client->handler = *handler;
    client->client_data = client_data;
    if (hostport_split(host_port, host, sizeof(host), port, sizeof(port)) != 0 || host[0] == '\0') {
        snprintf(err, err_size, "%s: expected HOST:PORT", host_port);
        goto fail;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    rv = getaddrinfo(host, port, &hints, &res);
    if (rv != 0) {
        snprintf(err, err_size, "%s: %s", host_port, gai_strerror(rv));
        goto fail;
    }
    if (options && options->tls) {
        SSL *ssl = tls_setup(client, options, host, err, err_size);
        if (!ssl)
            goto fail;
        client->bev = h2_pump_bev_new(base, -1, ssl, 0);
        if (!client->bev) {
            snprintf(err, err_size, "cannot set up TLS");
            goto fail;
        }
    } else {
        client->bev = h2_pump_bev_new(base, -1, NULL, 0);
        if (!client->bev) {
            snprintf(err, err_size, "out of memory");
            goto fail;
        }
    }
    client->flush_event = event_new(base, -1, 0, on_flush_event, client);
    if (!client->flush_event || session_setup(client) != 0) {
        snprintf(err, err_size, "out of memory");
        goto fail;
    }
    bufferevent_setcb(client->bev, on_read, on_write, on_event, client);
    bufferevent_setwatermark(client->bev, EV_WRITE, H2_OUTPUT_LOW_WATER, 0);
    bufferevent_enable(client->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(client->bev, res->ai_addr, (int)res->ai_addrlen) != 0) {
        snprintf(err, err_size, "%s: cannot connect: %s", host_port, strerror(errno));
        goto fail;
    }
    freeaddrinfo(res);
    return client;
fail:
    if (res)
        freeaddrinfo(res);
    client->broken = 1; /* the caller hears of it through ERR, not the handler */
    h2_client_free(client);
    return NULL;
}

void h2_client_free(struct h2_client *client)
{
    if (!client)
        return;
    client->broken = 1;
    if (client->session)
        nghttp2_session_del(client->session);
    if (client->flush_event)
        event_free(client->flush_event);
    if (client->bev)
        bufferevent_free(client->bev);
    if (client->ssl_ctx)
        SSL_CTX_free(client->ssl_ctx);
    free(client);
}

int h2_client_broken(const struct h2_client *client)
{
    return client->broken;
}

int h2_client_is_tls(const struct h2_client *client)
{
    return client->ssl_ctx != NULL;
}

/* --- Streams ------------------------------------------------------------- */

int32_t h2_client_request(struct h2_client *client, const struct h2_header *headers, size_t count,
                          void *stream_data)
{
    nghttp2_nv stack[16];
    nghttp2_nv *nv;
    nghttp2_data_provider provider;
    int32_t stream_id;

    if (client->broken)
        return -1;
    nv = h2_headers_to_nv(headers, count, stack, 16);
    if (!nv)
        return -1;
    provider.source.ptr = stream_data;
    provider.read_callback = on_data_read;
    stream_id = nghttp2_submit_request(client->session, NULL, nv, count, &provider, stream_data);
    if (nv != stack)
        free(nv);
    if (stream_id < 0)
        return -1;
    h2_client_schedule_flush(client);
    return stream_id;
}

void h2_client_stream_resume(struct h2_client *client, int32_t stream_id)
{
    nghttp2_session_resume_data(client->session, stream_id);
    h2_client_schedule_flush(client);
}

void h2_client_stream_reset(struct h2_client *client, int32_t stream_id, uint32_t error_code)
{
    nghttp2_submit_rst_stream(client->session, NGHTTP2_FLAG_NONE, stream_id, error_code);
    h2_client_schedule_flush(client);
}

void h2_client_stream_forget(struct h2_client *client, int32_t stream_id)
{
    if (client->session)
        nghttp2_session_set_stream_user_data(client->session, stream_id, NULL);
}
