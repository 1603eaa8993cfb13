/* grpc_call: the call API handlers use (grpc.h) and the send path:
 * response headers, the per-call send queue, trailers and status. */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "grpc/grpc_connect.h"
#include "grpc/grpc_internal.h"
#include "h2/h2.h"

/* --- Small containers ---------------------------------------------------- */

int grpc_header_list_add(struct header_list *list, const char *name, size_t name_len,
                         const char *value, size_t value_len)
{
    size_t need = list->len + name_len + value_len + 2;

    if (need > list->cap) {
        size_t cap = list->cap ? list->cap : 256;
        while (cap < need)
            cap *= 2;
        char *arena = realloc(list->arena, cap);
        if (!arena)
            return -1;
        list->arena = arena;
        list->cap = cap;
    }
    memcpy(list->arena + list->len, name, name_len);
    list->arena[list->len + name_len] = '\0';
    list->len += name_len + 1;
    memcpy(list->arena + list->len, value, value_len);
    list->arena[list->len + value_len] = '\0';
    list->len += value_len + 1;
    list->count++;
    return 0;
}

/* Iterates: *offset starts at 0.  Returns 1 with NAME/VALUE set, or 0 at the end. */
int grpc_header_list_next(const struct header_list *list, size_t *offset, const char **name,
                          const char **value)
{
    if (*offset >= list->len)
        return 0;
    *name = list->arena + *offset;
    *offset += strlen(*name) + 1;
    *value = list->arena + *offset;
    *offset += strlen(*value) + 1;
    return 1;
}

void grpc_header_list_free(struct header_list *list)
{
    free(list->arena);
    memset(list, 0, sizeof(*list));
}

/* --- Sending ------------------------------------------------------------- */

void grpc_call_count_status(struct grpc_call *call, int status)
{
    if (call->entry && status >= 0 && status < GRPC_STATUS_COUNT)
        call->entry->by_status[status]++;
}

/* Builds :status, content-type and, for Trailers-Only or trailers, the
 * status fields.  Returns the header count written to HEADERS. */
static size_t status_headers(struct grpc_call *call, struct h2_header *headers, size_t max,
                             char *status_buf, char *message_buf, size_t message_size,
                             const struct header_list *extra)
{
    size_t n = 0, offset = 0;
    const char *name, *value;

    snprintf(status_buf, 12, "%d", call->status);
    headers[n++] = (struct h2_header){"grpc-status", 11, status_buf, strlen(status_buf)};
    if (call->status_message && call->status_message[0]) {
        /* A message too long for the buffer is cut at a whole escape. */
        grpc_message_encode(call->status_message, strlen(call->status_message), message_buf,
                            message_size);
        headers[n++] = (struct h2_header){"grpc-message", 12, message_buf, strlen(message_buf)};
    }
    while (n < max && grpc_header_list_next(extra, &offset, &name, &value))
        headers[n++] = (struct h2_header){name, strlen(name), value, strlen(value)};
    return n;
}

void grpc_call_send_trailers(struct grpc_call *call)
{
    struct h2_header headers[32];
    char status_buf[12];
    char message_buf[4096];
    size_t n = status_headers(call, headers, 32, status_buf, message_buf, sizeof(message_buf),
                              &call->trailing_metadata);

    call->trailers_sent = 1;
    grpc_call_count_status(call, call->status);
    if (call->stream)
        call->transport->trailers(call->stream, headers, n);
}

/* The response content-type: the protocol's, or the request's own type
 * without its parameters (gRPC-Web answers in the type it was asked in). */
static struct h2_header call_content_type(const struct grpc_call *call)
{
    const char *type = call->protocol->response_content_type;
    size_t len;

    if (!type)
        type = grpc_call_metadata(call, "content-type");
    len = strcspn(type, "; \t");
    return (struct h2_header){"content-type", 12, type, len};
}

/* Queues the status and trailing metadata as the body's last frame, for
 * protocols that carry them there.  Returns 0 or -1 (memory). */
static int call_queue_body_trailers(struct grpc_call *call)
{
    struct h2_header headers[32];
    const char *names[32], *values[32];
    char status_buf[12];
    char message_buf[4096];
    size_t n = status_headers(call, headers, 32, status_buf, message_buf, sizeof(message_buf),
                              &call->trailing_metadata);

    for (size_t i = 0; i < n; i++) {
        names[i] = headers[i].name;
        values[i] = headers[i].value;
    }
    call->trailers_sent = 1;
    grpc_call_count_status(call, call->status);
    return grpc_web_trailer_frame(&call->out, names, values, n);
}

/* Sends the response HEADERS: Trailers-Only when TRAILERS_ONLY. */
static int call_send_headers(struct grpc_call *call, int trailers_only)
{
    struct h2_header headers[40];
    char status_buf[12];
    char message_buf[4096];
    size_t n = 0, offset = 0;
    const char *name, *value;

    if (!call->stream)
        return -1;
    /* gRPC-Web's status always goes in the body, after no message. */
    if (call->protocol->trailers_in_body)
        trailers_only = 0;
    headers[n++] = (struct h2_header){":status", 7, "200", 3};
    headers[n++] = call_content_type(call);
    if (!trailers_only && !call->protocol->connect) {
        const char *encoding = grpc_encoding_name((enum grpc_encoding)call->response_encoding);
        if (call->response_encoding != GRPC_ENCODING_IDENTITY)
            headers[n++] = (struct h2_header){"grpc-encoding", 13, encoding, strlen(encoding)};
        headers[n++] = (struct h2_header){"grpc-accept-encoding", 20, GRPC_ACCEPT_ENCODING_VALUE,
                                          strlen(GRPC_ACCEPT_ENCODING_VALUE)};
    }
    while (n < 16 && grpc_header_list_next(&call->initial_metadata, &offset, &name, &value))
        headers[n++] = (struct h2_header){name, strlen(name), value, strlen(value)};
    n += grpc_http_cors_headers(call, headers + n, 20 - n);
    if (trailers_only) {
        n += status_headers(call, headers + n, 40 - n, status_buf, message_buf, sizeof(message_buf),
                            &call->trailing_metadata);
        call->trailers_sent = 1;
        grpc_call_count_status(call, call->status);
    }
    call->headers_sent = 1;
    return call->transport->respond(call->stream, headers, n, !trailers_only);
}

/* A message was queued: the first one sends the response headers, later
 * ones wake a deferred data provider.  Returns 0 or -1. */
static int call_queued(struct grpc_call *call)
{
    /* A Connect unary response goes out whole when the call finishes: its
     * HTTP status depends on how it ends. */
    if (call->protocol->bare_body)
        return 0;
    if (!call->headers_sent)
        return call_send_headers(call, 0);
    if (call->deferred) {
        call->deferred = 0;
        call->transport->resume(call->stream);
    }
    return 0;
}

/* A handler that keeps pushing while its queue is over the bound (a
 * client that does not read) is stopped at GRPC_SEND_CAP_FACTOR times the
 * bound: the call ends RESOURCE_EXHAUSTED and what it queued is dropped.
 * Returns 0 when LEN more body bytes may be queued, or -1 after ending it. */
static int call_send_room(struct grpc_call *call, size_t len)
{
    size_t pending = byte_queue_length(&call->out);
    size_t bound = call->server->limits.send_bound_bytes;
    size_t cap = bound * GRPC_SEND_CAP_FACTOR;
    char message[128];

    if (pending <= bound || pending + GRPC_FRAME_HEADER_LEN + len <= cap)
        return 0;
    call->door->send_cap_cuts++;
    snprintf(message, sizeof(message),
             "the client is not reading its responses (more than %zu bytes queued)", cap);
    grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
    if (call->stream)
        call->transport->reset_after_end(call->stream, H2_CANCEL);
    return -1;
}

/* 1 when a LEN-byte message of CALL goes out compressed: the client
 * accepts an encoding and the message is big enough to gain from it. */
static int call_compresses(const struct grpc_call *call, size_t len)
{
    return call->response_encoding != GRPC_ENCODING_IDENTITY && len >= GRPC_COMPRESS_MIN_BYTES;
}

/* Queues the whole message BODY compressed, or as it is when compressing
 * does not make it smaller.  Returns 0, or -1 when memory is short. */
static int call_append_compressed(struct grpc_call *call, const uint8_t *body, size_t len)
{
    enum grpc_encoding encoding = (enum grpc_encoding)call->response_encoding;
    uint8_t *packed;
    size_t packed_len;
    int rv;

    if (grpc_deflate(encoding, body, len, &packed, &packed_len) != 0)
        return -1;
    if (packed_len < len) {
        rv = grpc_frame_append(&call->out, packed, packed_len, 1);
        if (rv == 0)
            call->door->compressed_sent[encoding]++;
    } else {
        rv = grpc_frame_append(&call->out, body, len, 0);
    }
    free(packed);
    return rv;
}

/* Queues a JSON message (freed here), enveloped.  Returns 0 or -1. */
static int call_queue_json(struct grpc_call *call, char *json, size_t len)
{
    uint8_t *at;

    if (!json)
        return -1;
    if (call_send_room(call, len) != 0 || !(at = grpc_frame_reserve(&call->out, len))) {
        free(json);
        return -1;
    }
    memcpy(at, json, len);
    free(json);
    return call_queued(call);
}

int grpc_call_send_encoded(struct grpc_call *call, const uint8_t *prefix, size_t prefix_len,
                           const uint8_t *body, size_t body_len)
{
    size_t len = prefix_len + body_len;
    uint8_t *at;
    int rv;

    if (call->finished || !call->stream)
        return -1;
    if (call->protocol->json) {
        char *json = grpc_connect_json_encoded(call, prefix, prefix_len, body, body_len, &len);
        return call_queue_json(call, json, len);
    }
    if (call_send_room(call, len) != 0)
        return -1;
    if (call_compresses(call, len)) {
        uint8_t *whole = malloc(len);
        if (!whole)
            return -1;
        memcpy(whole, prefix, prefix_len);
        memcpy(whole + prefix_len, body, body_len);
        rv = call_append_compressed(call, whole, len);
        free(whole);
        return rv == 0 ? call_queued(call) : -1;
    }
    at = grpc_frame_reserve(&call->out, len);
    if (!at)
        return -1;
    if (prefix_len)
        memcpy(at, prefix, prefix_len);
    if (body_len)
        memcpy(at + prefix_len, body, body_len);
    return call_queued(call);
}

int grpc_call_send(struct grpc_call *call, const ProtobufCMessage *message)
{
    size_t len;
    uint8_t *at;
    int rv;

    if (call->finished || !call->stream)
        return -1;
    if (call->protocol->json) {
        char *json = grpc_connect_json_message(call, message, &len);
        return call_queue_json(call, json, len);
    }
    len = protobuf_c_message_get_packed_size(message);
    if (call_send_room(call, len) != 0)
        return -1;
    if (call_compresses(call, len)) {
        uint8_t *packed = malloc(len);
        if (!packed)
            return -1;
        protobuf_c_message_pack(message, packed);
        rv = call_append_compressed(call, packed, len);
        free(packed);
        return rv == 0 ? call_queued(call) : -1;
    }
    at = grpc_frame_reserve(&call->out, len);
    if (!at)
        return -1;
    protobuf_c_message_pack(message, at);
    return call_queued(call);
}

int grpc_call_start_response(struct grpc_call *call)
{
    if (call->finished || !call->stream)
        return -1;
    if (call->headers_sent || call->protocol->bare_body)
        return 0;
    return call_send_headers(call, 0);
}

static int add_metadata(struct header_list *list, const char *name, const uint8_t *value,
                        size_t len)
{
    size_t name_len = strlen(name);
    int rv;

    if (name_len > 4 && strcmp(name + name_len - 4, "-bin") == 0) {
        size_t cap = (len + 2) / 3 * 4 + 1;
        char *encoded = malloc(cap);
        if (!encoded)
            return -1;
        size_t n = base64_encode(value, len, encoded, cap);
        rv = grpc_header_list_add(list, name, name_len, encoded, n);
        free(encoded);
        return rv;
    }
    return grpc_header_list_add(list, name, name_len, (const char *)value, len);
}

int grpc_call_add_initial_metadata(struct grpc_call *call, const char *name, const uint8_t *value,
                                   size_t len)
{
    if (call->headers_sent)
        return -1;
    return add_metadata(&call->initial_metadata, name, value, len);
}

int grpc_call_add_trailer(struct grpc_call *call, const char *name, const uint8_t *value,
                          size_t len)
{
    if (call->finished)
        return -1;
    return add_metadata(&call->trailing_metadata, name, value, len);
}

void grpc_call_finish(struct grpc_call *call, int status, const char *message)
{
    if (call->finished)
        return;
    call->finished = 1;
    call->status = status;
    call->status_message = message ? strdup(message) : NULL;
    if (call->deadline)
        event_del(call->deadline);
    grpc_call_drop_input(call);
    if (!call->stream)
        return;
    if (call->protocol->bare_body && !call->half_closed && !call->transport->carries_trailers) {
        /* Over HTTP/1.1 an answer before the body's end closes the
         * connection, and a client still writing its body may see the
         * reset before the answer: read the rest first (bounded by the
         * receive limit and the request timeout). */
        call->respond_at_end = 1;
        call->request_since_sweep = call->server->sweeps;
        return;
    }
    if (call->protocol->connect) {
        if (grpc_connect_finish(call) != 0)
            call->transport->reset_after_end(call->stream, H2_INTERNAL_ERROR);
    } else if (call->protocol->trailers_in_body && call_queue_body_trailers(call) != 0) {
        /* No trailer frame: the client must not take the body for whole. */
        call->transport->reset_after_end(call->stream, H2_INTERNAL_ERROR);
    }
    if (!call->headers_sent) {
        call_send_headers(call, 1);
    } else if (call->deferred) {
        call->deferred = 0;
        call->transport->resume(call->stream);
    }
    /* A client still sending after we answered learns to stop.  Not a
     * Connect unary client: its body is one message, and clients such as
     * curl drop a whole response when a reset beats their last bytes; what
     * still comes is released unread. */
    if (!call->half_closed && !call->protocol->bare_body)
        call->transport->reset_after_end(call->stream, H2_NO_ERROR);
}

/* The layer itself ends the call: queued output is dropped. */
void grpc_call_fail(struct grpc_call *call, int status, const char *message)
{
    call->out.end = call->out.start + call->out_partial;
    grpc_call_finish(call, status, message);
}

int grpc_call_finished(const struct grpc_call *call)
{
    return call->finished;
}

int grpc_call_cancelled(const struct grpc_call *call)
{
    return call->cancelled;
}

size_t grpc_call_pending_bytes(const struct grpc_call *call)
{
    return byte_queue_length(&call->out);
}

int grpc_call_over_bound(const struct grpc_call *call)
{
    return grpc_call_pending_bytes(call) > call->server->limits.send_bound_bytes;
}

size_t grpc_call_connection_backlog(const struct grpc_call *call)
{
    return call->stream ? call->transport->backlog(call->stream) : 0;
}

void grpc_call_want_writable(struct grpc_call *call)
{
    if (call->stream && call->deferred && call->headers_sent) {
        call->deferred = 0;
        call->transport->resume(call->stream);
    }
}

void grpc_call_set_user(struct grpc_call *call, void *user)
{
    call->user = user;
}

void *grpc_call_user(const struct grpc_call *call)
{
    return call->user;
}

void *grpc_call_door_data(const struct grpc_call *call)
{
    return call->door->door_data;
}

const char *grpc_call_door_name(const struct grpc_call *call)
{
    return call->door->name;
}

int grpc_call_door_kind(const struct grpc_call *call)
{
    return call->door->kind;
}

const struct grpc_door *grpc_call_door(const struct grpc_call *call)
{
    return call->door;
}

const char *grpc_call_path(const struct grpc_call *call)
{
    return call->entry ? call->entry->method->path : "";
}

const void *grpc_call_caller(const struct grpc_call *call)
{
    return call->caller;
}

const char *grpc_call_metadata(const struct grpc_call *call, const char *name)
{
    size_t offset = 0;
    const char *n, *v;

    while (grpc_header_list_next(&call->request_headers, &offset, &n, &v))
        if (strcmp(n, name) == 0)
            return v;
    return NULL;
}
