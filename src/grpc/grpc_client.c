/* grpc_client: the client side of gRPC over HTTP/2 (see grpc_client.h). */
#include "grpc/grpc_client.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byte_queue.h"
#include "common/list.h"
#include "h2/h2.h"
#include "h2/h2_client.h"

#define MAX_RESPONSE (64 * 1024 * 1024)

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
    struct list_node link; /* on the client's calls until finished */
};

struct grpc_client {
    struct event_base *base;
    struct h2_client *h2;
    struct list_node calls; /* struct grpc_client_call, the newest first */
    char authority[256];
    int broken;
};

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
    if (call->done)
        return;
    call->done = 1;
    list_remove(&call->link);
    call_report(call);
    if (call->deadline)
        event_free(call->deadline);
    grpc_reader_free(&call->reader);
    byte_queue_free(&call->out);
    free(call);
}

/* The connection is gone (h2's connection_broken, or grpc_client_free):
 * every open call ends with UNAVAILABLE and WHY. */
static void client_break(void *arg, const char *why)
{
    struct grpc_client *client = arg;
    struct list_node *node, *next;

    client->broken = 1;
    list_for_each_safe (node, next, &client->calls) {
        struct grpc_client_call *call = list_entry(node, struct grpc_client_call, link);
        if (call->stream_id > 0 && client->h2)
            h2_client_stream_forget(client->h2, call->stream_id);
        call->result.status = GRPC_STATUS_UNAVAILABLE;
        snprintf(call->result.message, sizeof(call->result.message), "%s", why);
        call_finish(call);
    }
}

/* --- h2 client handler ---------------------------------------------------- */

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

/* Response headers and trailers alike: gRPC reads its status from
 * whichever block carries it (Trailers-Only puts it in the first). */
static void call_on_header(void *stream_data, int trailer, const uint8_t *name, size_t name_len,
                           const uint8_t *value, size_t value_len)
{
    struct grpc_client_call *call = stream_data;

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
}

static void call_on_data(void *stream_data, const uint8_t *data, size_t len)
{
    struct grpc_client_call *call = stream_data;

    while (len > 0) {
        size_t consumed;
        enum grpc_reader_result rv = grpc_reader_feed(&call->reader, data, len, &consumed);
        data += consumed;
        len -= consumed;
        if (rv == GRPC_READER_NEED_MORE)
            break;
        if (rv != GRPC_READER_MESSAGE) {
            call->result.status = GRPC_STATUS_INTERNAL;
            call->have_status = 1;
            snprintf(call->result.message, sizeof(call->result.message),
                     "malformed response message framing");
            h2_client_stream_reset(call->client->h2, call->stream_id, H2_CANCEL);
            return;
        }
        size_t message_len;
        const uint8_t *message = grpc_reader_message(&call->reader, &message_len);
        if (call->handler.on_message)
            call->handler.on_message(call->arg, message, message_len);
        grpc_reader_take(&call->reader);
    }
}

static void call_on_close(void *stream_data, uint32_t error_code)
{
    struct grpc_client_call *call = stream_data;

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
}

/* Request bytes: the queued, framed messages; the end of the request once
 * the caller half-closed. */
static ssize_t call_on_read(void *stream_data, uint8_t *buf, size_t length, uint32_t *flags)
{
    struct grpc_client_call *call = stream_data;
    size_t available = byte_queue_length(&call->out);

    if (available == 0) {
        if (call->send_closed) {
            *flags |= H2_READ_EOF_END_STREAM;
            return 0;
        }
        call->deferred = 1;
        return H2_READ_DEFERRED;
    }
    if (length > available)
        length = available;
    memcpy(buf, call->out.data + call->out.start, length);
    byte_queue_consume(&call->out, length);
    if (byte_queue_length(&call->out) == 0 && call->send_closed)
        *flags |= H2_READ_EOF_END_STREAM;
    return (ssize_t)length;
}

static const struct h2_client_handler call_handler = {
    .stream_header = call_on_header,
    .stream_data = call_on_data,
    .stream_read = call_on_read,
    .stream_close = call_on_close,
    .connection_broken = client_break,
};

/* --- Connection ---------------------------------------------------------- */

struct grpc_client *grpc_client_new(struct event_base *base, const char *host_port,
                                    const struct grpc_client_options *options, char *err,
                                    size_t err_size)
{
    struct grpc_client *client = calloc(1, sizeof(*client));
    struct h2_client_options h2_options;

    if (!client) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    list_init(&client->calls);
    client->base = base;
    snprintf(client->authority, sizeof(client->authority), "%s", host_port);
    memset(&h2_options, 0, sizeof(h2_options));
    if (options) {
        h2_options.tls = options->tls;
        h2_options.ca_file = options->ca_file;
        h2_options.cert_file = options->cert_file;
        h2_options.key_file = options->key_file;
        h2_options.server_name = options->server_name;
    }
    client->h2 = h2_client_new(base, host_port, &h2_options, &call_handler, client, err, err_size);
    if (!client->h2) {
        free(client);
        return NULL;
    }
    return client;
}

void grpc_client_free(struct grpc_client *client)
{
    if (!client)
        return;
    client_break(client, "the client closed the connection");
    h2_client_free(client->h2);
    free(client);
}

int grpc_client_broken(const struct grpc_client *client)
{
    return client->broken || h2_client_broken(client->h2);
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
    h2_client_stream_reset(call->client->h2, call->stream_id, H2_CANCEL);
}

struct grpc_client_call *grpc_client_call_start(struct grpc_client *client, const char *path,
                                                const char *token, uint32_t timeout_ms,
                                                const struct grpc_client_call_handler *handler,
                                                void *arg)
{
    struct grpc_client_call *call;
    struct h2_header nv[9];
    size_t n = 0;
    char authorization[600];
    char timeout[16];

#define NV(NAME, VALUE)                                                                            \
    nv[n++] = (struct h2_header)                                                                   \
    {                                                                                              \
        (NAME), strlen(NAME), (VALUE), strlen(VALUE)                                               \
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
    NV(":scheme", h2_client_is_tls(client->h2) ? "https" : "http");
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
    call->stream_id = h2_client_request(client->h2, nv, n, call);
    if (call->stream_id < 0) {
        grpc_reader_free(&call->reader);
        free(call);
        return NULL;
    }
    list_insert_head(&client->calls, &call->link);
    if (timeout_ms > 0) {
        struct timeval tv = {(time_t)(timeout_ms / 1000), (suseconds_t)(timeout_ms % 1000) * 1000};
        call->deadline = evtimer_new(client->base, on_call_deadline, call);
        if (call->deadline)
            evtimer_add(call->deadline, &tv);
    }
    h2_client_schedule_flush(client->h2);
    return call;
}

static void call_wake(struct grpc_client_call *call)
{
    if (call->deferred) {
        call->deferred = 0;
        h2_client_stream_resume(call->client->h2, call->stream_id);
    }
    h2_client_schedule_flush(call->client->h2);
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

    h2_client_stream_reset(client->h2, call->stream_id, H2_CANCEL);
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
