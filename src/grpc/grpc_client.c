/* grpc_client: the client side of gRPC over HTTP/2 (see grpc_client.h). */
#include "grpc/grpc_client.h"

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

#include "common/byte_queue.h"
#include "common/hostport.h"
#include "h2/h2.h"

#define OUTPUT_HIGH_WATER (256 * 1024)
#define STREAM_WINDOW     (4 * 1024 * 1024)
#define CONNECTION_WINDOW (64 * 1024 * 1024)
#define MAX_RESPONSE      (64 * 1024 * 1024)

struct grpc_client_call {
    struct grpc_client *client;
    int32_t stream_id;
    struct grpc_client_call_handler handler;
    void *arg;
    struct byte_queue out;
    struct grpc_reader reader;
    int send_closed;
    int deferred;
    int http_status;
    int have_status;
    int done;
    int reported; /* on_done ran (the deadline may report before the stream closes) */
    struct event *deadline;
    struct grpc_client_result result;
    struct grpc_client_call *prev, *next;
};

struct grpc_client {
    struct event_base *base;
    struct bufferevent *bev;
    SSL_CTX *ssl_ctx;
    nghttp2_session *session;
    struct event *flush_event;
    struct grpc_client_call *calls;
    char authority[256];
    int connected;
    int broken;
    int in_callback;
};

static void client_flush(struct grpc_client *client);

/* Tells the caller how the call ended, once. */
static void call_report(struct grpc_client_call *call)
{
    if (call->reported)
        return;
    call->reported = 1;
    if (call->handler.on_done)
        call->handler.on_done(call->arg, &call->result);
}

static void call_finish(struct grpc_client_call *call)
{
    struct grpc_client *client = call->client;

    if (call->done)
        return;
    call->done = 1;
    if (call->prev)
        call->prev->next = call->next;
    else
        client->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    call_report(call);
    if (call->deadline)
        event_free(call->deadline);
    grpc_reader_free(&call->reader);
    byte_queue_free(&call->out);
    free(call);
}

static void client_break(struct grpc_client *client, const char *why)
{
    struct grpc_client_call *call, *next;

    client->broken = 1;
    for (call = client->calls; call; call = next) {
        next = call->next;
        if (call->stream_id > 0 && client->session)
            nghttp2_session_set_stream_user_data(client->session, call->stream_id, NULL);
        call->result.status = GRPC_STATUS_UNAVAILABLE;
        snprintf(call->result.message, sizeof(call->result.message), "%s", why);
        call_finish(call);
    }
}

/* --- nghttp2 callbacks --------------------------------------------------- */

static void append_trailer(struct grpc_client_result *result, const uint8_t *name, size_t name_len,
                           const uint8_t *value, size_t value_len)
{
    size_t used = strlen(result->trailers);
    size_t room = sizeof(result->trailers) - used;

    if (name_len + value_len + 4 > room)
        return;
    snprintf(result->trailers + used, room, "%.*s: %.*s\n", (int)name_len, (const char *)name,
             (int)value_len, (const char *)value);
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t name_len, const uint8_t *value, size_t value_len, uint8_t flags,
                     void *user_data)
{
    struct grpc_client_call *call =
        nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);

    if (!call)
        return 0;
    if (name_len == 7 && memcmp(name, ":status", 7) == 0) {
        call->http_status = atoi((const char *)value);
    } else if (name_len == 11 && memcmp(name, "grpc-status", 11) == 0) {
        char digits[12];
        snprintf(digits, sizeof(digits), "%.*s", (int)(value_len < 11 ? value_len : 11),
                 (const char *)value);
        call->result.status = atoi(digits);
        call->have_status = 1;
    } else if (name_len == 12 && memcmp(name, "grpc-message", 12) == 0) {
        char decoded[sizeof(call->result.message)];
        size_t n = value_len < sizeof(decoded) - 1 ? value_len : sizeof(decoded) - 1;
        n = grpc_message_decode((const char *)value, n, decoded);
        memcpy(call->result.message, decoded, n);
        call->result.message[n] = '\0';
    } else if (name_len > 0 && name[0] != ':') {
        append_trailer(&call->result, name, name_len, value, value_len);
    }
    return 0;
}

static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                              const uint8_t *data, size_t len, void *user_data)
{
    struct grpc_client_call *call = nghttp2_session_get_stream_user_data(session, stream_id);

    while (call && len > 0) {
        size_t consumed;
        int rv = grpc_reader_feed(&call->reader, data, len, &consumed);
        data += consumed;
        len -= consumed;
        if (rv == GRPC_READER_NEED_MORE)
            break;
        if (rv != GRPC_READER_MESSAGE) {
            call->result.status = GRPC_STATUS_INTERNAL;
            call->have_status = 1;
            snprintf(call->result.message, sizeof(call->result.message),
                     "malformed response message framing");
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, H2_CANCEL);
            return 0;
        }
        size_t message_len;
        const uint8_t *message = grpc_reader_message(&call->reader, &message_len);
        if (call->handler.on_message)
            call->handler.on_message(call->arg, message, message_len);
        grpc_reader_take(&call->reader);
    }
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    struct grpc_client_call *call = nghttp2_session_get_stream_user_data(session, stream_id);

    if (!call)
        return 0;
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    if (!call->have_status) {
        if (error_code == H2_CANCEL) {
            call->result.status = GRPC_STATUS_CANCELLED;
        } else if (call->http_status != 0 && call->http_status != 200) {
            call->result.status =
                call->http_status == 415 ? GRPC_STATUS_UNKNOWN : GRPC_STATUS_INTERNAL;
            snprintf(call->result.message, sizeof(call->result.message), "HTTP status %d",
                     call->http_status);
        } else {
            call->result.status =
                error_code == H2_REFUSED_STREAM ? GRPC_STATUS_UNAVAILABLE : GRPC_STATUS_INTERNAL;
            snprintf(call->result.message, sizeof(call->result.message),
                     "stream closed without a status (HTTP/2 error %u)", error_code);
        }
    }
    call_finish(call);
    return 0;
}

static ssize_t on_data_read(nghttp2_session *session, int32_t stream_id, uint8_t *buf,
                            size_t length, uint32_t *data_flags, nghttp2_data_source *source,
                            void *user_data)
{
    struct grpc_client_call *call = source->ptr;
    size_t available = byte_queue_length(&call->out);

    if (available == 0) {
        if (call->send_closed) {
            *data_flags |= NGHTTP2_DATA_FLAG_EOF;
            return 0;
        }
        call->deferred = 1;
        return NGHTTP2_ERR_DEFERRED;
    }
    if (length > available)
        length = available;
    memcpy(buf, call->out.data + call->out.start, length);
    byte_queue_consume(&call->out, length);
    if (byte_queue_length(&call->out) == 0 && call->send_closed)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)length;
}

/* --- Connection ---------------------------------------------------------- */

static void client_flush(struct grpc_client *client)
{
    struct evbuffer *out;

    if (!client->session || client->broken || !client->connected)
        return;
    out = bufferevent_get_output(client->bev);
    while (evbuffer_get_length(out) < OUTPUT_HIGH_WATER) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(client->session, &data);
        if (n < 0) {
            client_break(client, "HTTP/2 session error");
            return;
        }
        if (n == 0)
            break;
        evbuffer_add(out, data, (size_t)n);
    }
    if (!nghttp2_session_want_read(client->session) && !nghttp2_session_want_write(client->session))
        client_break(client, "the server closed the connection");
}

static void on_flush_event(evutil_socket_t fd, short what, void *arg)
{
    client_flush(arg);
}

static void schedule_flush(struct grpc_client *client)
{
    if (client->flush_event)
        event_active(client->flush_event, EV_WRITE, 0);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct grpc_client *client = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    while (evbuffer_get_length(in) > 0 && !client->broken) {
        struct evbuffer_iovec vec;
        if (evbuffer_peek(in, -1, NULL, &vec, 1) < 1)
            break;
        ssize_t n = nghttp2_session_mem_recv(client->session, vec.iov_base, vec.iov_len);
        if (n < 0) {
            client_break(client, "malformed HTTP/2 from the server");
            return;
        }
        evbuffer_drain(in, (size_t)n);
    }
    client_flush(client);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    client_flush(arg);
}

static void on_event(struct bufferevent *bev, short events, void *arg)
{
    struct grpc_client *client = arg;
    char why[256];

    if (events & BEV_EVENT_CONNECTED) {
        SSL *ssl = bufferevent_openssl_get_ssl(bev);
        int one = 1;
        setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (ssl) {
            const unsigned char *alpn = NULL;
            unsigned int alpn_len = 0;
            SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
            if (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0) {
                client_break(client, "the server did not negotiate h2 over TLS");
                return;
            }
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

static int session_setup(struct grpc_client *client)
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
    settings[1].value = STREAM_WINDOW;
    if (nghttp2_submit_settings(client->session, NGHTTP2_FLAG_NONE, settings, 2) != 0)
        return -1;
    nghttp2_session_set_local_window_size(client->session, NGHTTP2_FLAG_NONE, 0, CONNECTION_WINDOW);
    return 0;
}

static SSL *tls_setup(struct grpc_client *client, const struct grpc_client_options *options,
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

struct grpc_client *grpc_client_new(struct event_base *base, const char *host_port,
                                    const struct grpc_client_options *options, char *err,
                                    size_t err_size)
{
    struct grpc_client *client = calloc(1, sizeof(*client));
    struct addrinfo hints, *res = NULL;
    char host[200], port[16];
    int rv;

    if (!client) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    client->base = base;
    if (hostport_split(host_port, host, sizeof(host), port, sizeof(port)) != 0 || host[0] == '\0') {
        snprintf(err, err_size, "%s: expected HOST:PORT", host_port);
        goto fail;
    }
    snprintf(client->authority, sizeof(client->authority), "%s", host_port);
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
        client->bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                     BEV_OPT_CLOSE_ON_FREE);
        if (!client->bev) {
            SSL_free(ssl);
            snprintf(err, err_size, "cannot set up TLS");
            goto fail;
        }
        bufferevent_openssl_set_allow_dirty_shutdown(client->bev, 1);
    } else {
        client->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
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
    bufferevent_setwatermark(client->bev, EV_WRITE, 64 * 1024, 0);
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
    grpc_client_free(client);
    return NULL;
}

void grpc_client_free(struct grpc_client *client)
{
    if (!client)
        return;
    client_break(client, "the client closed the connection");
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

int grpc_client_broken(const struct grpc_client *client)
{
    return client->broken;
}

/* --- Calls --------------------------------------------------------------- */

/* The caller's deadline passed: it hears DEADLINE_EXCEEDED now, even when
 * the server or the network never answers; the stream is reset and the
 * call is freed when HTTP/2 lets go of it. */
static void on_call_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct grpc_client_call *call = arg;

    if (call->reported)
        return;
    call->result.status = GRPC_STATUS_DEADLINE_EXCEEDED;
    snprintf(call->result.message, sizeof(call->result.message), "deadline exceeded");
    call->have_status = 1;
    call->handler.on_message = NULL;
    call_report(call);
    nghttp2_submit_rst_stream(call->client->session, NGHTTP2_FLAG_NONE, call->stream_id, H2_CANCEL);
    schedule_flush(call->client);
}

struct grpc_client_call *grpc_client_call_start(struct grpc_client *client, const char *path,
                                                const char *token, uint32_t timeout_ms,
                                                const struct grpc_client_call_handler *handler,
                                                void *arg)
{
    struct grpc_client_call *call;
    nghttp2_nv nv[9];
    size_t n = 0;
    char authorization[600];
    char timeout[16];
    nghttp2_data_provider provider;

#define NV(NAME, VALUE)                                                                            \
    nv[n++] = (nghttp2_nv)                                                                         \
    {                                                                                              \
        (uint8_t *)(NAME), (uint8_t *)(VALUE), strlen(NAME), strlen(VALUE), NGHTTP2_NV_FLAG_NONE   \
    }
    if (client->broken)
        return NULL;
    call = calloc(1, sizeof(*call));
    if (!call)
        return NULL;
    call->client = client;
    call->handler = *handler;
    call->arg = arg;
    grpc_reader_init(&call->reader, MAX_RESPONSE);
    NV(":method", "POST");
    NV(":scheme", client->ssl_ctx ? "https" : "http");
    NV(":path", path);
    NV(":authority", client->authority);
    NV("content-type", "application/grpc");
    NV("te", "trailers");
    NV("user-agent", "agenthub-grpc-c/0.1");
    if (token && token[0]) {
        snprintf(authorization, sizeof(authorization), "Bearer %s", token);
        NV("authorization", authorization);
    }
    if (timeout_ms > 0) {
        snprintf(timeout, sizeof(timeout), "%um", timeout_ms);
        NV("grpc-timeout", timeout);
    }
#undef NV
    provider.source.ptr = call;
    provider.read_callback = on_data_read;
    call->stream_id = nghttp2_submit_request(client->session, NULL, nv, n, &provider, call);
    if (call->stream_id < 0) {
        grpc_reader_free(&call->reader);
        free(call);
        return NULL;
    }
    call->next = client->calls;
    if (call->next)
        call->next->prev = call;
    client->calls = call;
    if (timeout_ms > 0) {
        struct timeval tv = {(time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000};
        call->deadline = evtimer_new(client->base, on_call_deadline, call);
        if (call->deadline)
            evtimer_add(call->deadline, &tv);
    }
    schedule_flush(client);
    return call;
}

static void call_wake(struct grpc_client_call *call)
{
    if (call->deferred) {
        call->deferred = 0;
        nghttp2_session_resume_data(call->client->session, call->stream_id);
    }
    schedule_flush(call->client);
}

int grpc_client_call_send_encoded(struct grpc_client_call *call, const uint8_t *data, size_t len)
{
    uint8_t *at;

    if (call->send_closed)
        return -1;
    at = grpc_frame_reserve(&call->out, len);
    if (!at)
        return -1;
    if (len)
        memcpy(at, data, len);
    call_wake(call);
    return 0;
}

int grpc_client_call_send(struct grpc_client_call *call, const ProtobufCMessage *message)
{
    uint8_t *at;

    if (call->send_closed)
        return -1;
    at = grpc_frame_reserve(&call->out, protobuf_c_message_get_packed_size(message));
    if (!at)
        return -1;
    protobuf_c_message_pack(message, at);
    call_wake(call);
    return 0;
}

void grpc_client_call_close_send(struct grpc_client_call *call)
{
    call->send_closed = 1;
    call_wake(call);
}

void grpc_client_call_cancel(struct grpc_client_call *call)
{
    struct grpc_client *client = call->client;

    nghttp2_submit_rst_stream(client->session, NGHTTP2_FLAG_NONE, call->stream_id, H2_CANCEL);
    schedule_flush(client);
}

size_t grpc_client_call_pending_bytes(const struct grpc_client_call *call)
{
    return byte_queue_length(&call->out);
}

struct unary_state {
    const ProtobufCMessageDescriptor *response_type;
    ProtobufCMessage *response;
    int parse_failed;
    int done;
    struct grpc_client_result result;
};

static void unary_on_message(void *arg, const uint8_t *data, size_t len)
{
    struct unary_state *state = arg;

    if (state->response) {
        protobuf_c_message_free_unpacked(state->response, NULL);
        state->response = NULL;
        state->parse_failed = 1; /* two responses to a unary call */
        return;
    }
    state->response = protobuf_c_message_unpack(state->response_type, NULL, len, data);
    if (!state->response)
        state->parse_failed = 1;
}

static void unary_on_done(void *arg, const struct grpc_client_result *result)
{
    struct unary_state *state = arg;

    state->result = *result;
    state->done = 1;
}

int grpc_client_unary(struct grpc_client *client, const char *path, const char *token,
                      uint32_t timeout_ms, const ProtobufCMessage *request,
                      const ProtobufCMessageDescriptor *response_type, ProtobufCMessage **response,
                      struct grpc_client_result *result)
{
    static const struct grpc_client_call_handler handler = {unary_on_message, unary_on_done};
    struct unary_state state;
    struct grpc_client_call *call;

    memset(&state, 0, sizeof(state));
    state.response_type = response_type;
    *response = NULL;
    call = grpc_client_call_start(client, path, token, timeout_ms, &handler, &state);
    if (!call) {
        state.result.status = GRPC_STATUS_UNAVAILABLE;
        snprintf(state.result.message, sizeof(state.result.message), "connection unavailable");
        goto out;
    }
    if (grpc_client_call_send(call, request) != 0) {
        grpc_client_call_cancel(call);
    }
    grpc_client_call_close_send(call);
    while (!state.done)
        if (event_base_loop(client->base, EVLOOP_ONCE) != 0)
            break;
    if (!state.done) {
        state.result.status = GRPC_STATUS_INTERNAL;
        snprintf(state.result.message, sizeof(state.result.message), "event loop failed");
    }
    if (state.result.status == GRPC_STATUS_OK && (state.parse_failed || !state.response)) {
        state.result.status = GRPC_STATUS_INTERNAL;
        snprintf(state.result.message, sizeof(state.result.message),
                 "the server's response could not be parsed");
    }
    if (state.result.status == GRPC_STATUS_OK) {
        *response = state.response;
        state.response = NULL;
    }
out:
    if (state.response)
        protobuf_c_message_free_unpacked(state.response, NULL);
    if (result)
        *result = state.result;
    return state.result.status;
}

int grpc_client_result_trailer(const struct grpc_client_result *result, const char *name, char *out,
                               size_t out_size)
{
    size_t name_len = strlen(name);
    const char *line = result->trailers;

    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > name_len + 2 && memcmp(line, name, name_len) == 0 && line[name_len] == ':') {
            size_t value_len = len - name_len - 2;
            if (value_len >= out_size)
                value_len = out_size - 1;
            memcpy(out, line + name_len + 2, value_len);
            out[value_len] = '\0';
            return 1;
        }
        line = end ? end + 1 : line + len;
    }
    return 0;
}
