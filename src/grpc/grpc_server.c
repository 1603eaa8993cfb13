/* grpc_server: doors and their method tables, and the receive path: the
 * h2 handler that validates request headers, reassembles and decodes
 * request messages, enforces grpc-timeout and feeds the data provider. */
#include "grpc/grpc.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_internal.h"
#include "h2/h2.h"

#define HTTP2_NO_ERROR 0x0
#define HTTP2_CANCEL   0x8

/* --- Server, doors and method tables ------------------------------------ */

struct grpc_server *grpc_server_new(struct event_base *base, struct h2_server *h2,
                                    const struct grpc_limits *limits)
{
    struct grpc_server *server = calloc(1, sizeof(*server));

    if (!server)
        return NULL;
    server->base = base;
    server->h2 = h2;
    server->limits = *limits;
    return server;
}

void grpc_server_free(struct grpc_server *server)
{
    if (!server)
        return;
    while (server->doors) {
        struct grpc_door *door = server->doors;
        server->doors = door->next;
        free(door->methods);
        free(door);
    }
    free(server);
}

void grpc_server_set_request_check(struct grpc_server *server, grpc_request_check check)
{
    server->request_check = check;
}

struct grpc_door *grpc_door_new(struct grpc_server *server, const char *name, void *door_data)
{
    struct grpc_door *door = calloc(1, sizeof(*door));

    if (!door)
        return NULL;
    door->server = server;
    snprintf(door->name, sizeof(door->name), "%s", name);
    door->door_data = door_data;
    door->next = server->doors;
    server->doors = door;
    return door;
}

static struct door_method *door_find(const struct grpc_door *door, const char *path, size_t len)
{
    for (size_t i = 0; i < door->method_count; i++)
        if (door->methods[i].path_len == len &&
            memcmp(door->methods[i].method->path, path, len) == 0)
            return &door->methods[i];
    return NULL;
}

int grpc_door_register(struct grpc_door *door, const struct grpc_method *method)
{
    size_t len = strlen(method->path);

    if (door_find(door, method->path, len))
        return -1;
    if (door->method_count == door->method_cap) {
        size_t cap = door->method_cap ? door->method_cap * 2 : 16;
        struct door_method *methods = realloc(door->methods, cap * sizeof(*methods));
        if (!methods)
            return -1;
        door->methods = methods;
        door->method_cap = cap;
    }
    memset(&door->methods[door->method_count], 0, sizeof(door->methods[0]));
    door->methods[door->method_count].method = method;
    door->methods[door->method_count].path_len = len;
    door->method_count++;
    return 0;
}

int grpc_door_has_method(const struct grpc_door *door, const char *path)
{
    return door_find(door, path, strlen(path)) != NULL;
}

/* Service name of a "/svc/Method" path: points into PATH, length in *len. */
static const char *path_service(const char *path, size_t *len)
{
    const char *slash = strrchr(path, '/');
    *len = slash > path ? (size_t)(slash - path - 1) : 0;
    return path + 1;
}

/* 1 when SERVICE appears in one of DOOR's methods before INDEX. */
static int service_seen_before(const struct grpc_door *door, size_t index, const char *service,
                               size_t len)
{
    for (size_t j = 0; j < index; j++) {
        size_t other_len;
        const char *other = path_service(door->methods[j].method->path, &other_len);
        if (other_len == len && memcmp(other, service, len) == 0)
            return 1;
    }
    return 0;
}

void grpc_door_each_service(const struct grpc_door *door,
                            void (*fn)(const char *service, size_t len, void *arg), void *arg)
{
    for (size_t i = 0; i < door->method_count; i++) {
        size_t len;
        const char *service = path_service(door->methods[i].method->path, &len);
        if (!service_seen_before(door, i, service, len))
            fn(service, len, arg);
    }
}

size_t grpc_server_call_count(const struct grpc_server *server)
{
    return server->call_count;
}

void grpc_server_write_metrics(const struct grpc_server *server, FILE *out)
{
    fputs("# HELP agenthub_grpc_calls_total gRPC calls finished, by door, method and status.\n"
          "# TYPE agenthub_grpc_calls_total counter\n",
          out);
    for (const struct grpc_door *door = server->doors; door; door = door->next) {
        for (size_t i = 0; i < door->method_count; i++) {
            const struct door_method *m = &door->methods[i];
            for (int s = 0; s < GRPC_STATUS_COUNT; s++)
                if (m->by_status[s])
                    fprintf(out,
                            "agenthub_grpc_calls_total{door=\"%s\",method=\"%s\",status=\"%s\"} "
                            "%llu\n",
                            door->name, m->method->path, grpc_status_name(s),
                            (unsigned long long)m->by_status[s]);
        }
        if (door->unknown_method_calls)
            fprintf(out,
                    "agenthub_grpc_calls_total{door=\"%s\",method=\"unknown\","
                    "status=\"UNIMPLEMENTED\"} %llu\n",
                    door->name, (unsigned long long)door->unknown_method_calls);
        if (door->rejected_calls)
            fprintf(out, "agenthub_grpc_rejected_requests_total{door=\"%s\"} %llu\n", door->name,
                    (unsigned long long)door->rejected_calls);
    }
    fprintf(out,
            "# HELP agenthub_grpc_calls_open gRPC calls in flight.\n"
            "# TYPE agenthub_grpc_calls_open gauge\n"
            "agenthub_grpc_calls_open %zu\n",
            server->call_count);
}

/* --- Receiving ----------------------------------------------------------- */

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct grpc_call *call = arg;

    grpc_call_fail(call, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline exceeded");
    if (call->stream)
        h2_stream_reset_after_end(call->stream, HTTP2_CANCEL);
}

static void *call_stream_open(void *listener_data, struct h2_stream *stream)
{
    struct grpc_door *door = listener_data;
    struct grpc_call *call = calloc(1, sizeof(*call));

    if (!call)
        return NULL;
    call->server = door->server;
    call->door = door;
    call->stream = stream;
    grpc_reader_init(&call->reader, door->server->limits.max_recv_bytes);
    call->next = door->server->calls;
    if (call->next)
        call->next->prev = call;
    door->server->calls = call;
    door->server->call_count++;
    return call;
}

static int name_is(const uint8_t *name, size_t len, const char *literal)
{
    return len == strlen(literal) && memcmp(name, literal, len) == 0;
}

static int call_stream_header(void *data, const uint8_t *name, size_t name_len,
                              const uint8_t *value, size_t value_len)
{
    struct grpc_call *call = data;

    if (name_is(name, name_len, ":method")) {
        call->is_post = value_len == 4 && memcmp(value, "POST", 4) == 0;
        return 0;
    }
    if (name_is(name, name_len, "content-type")) {
        call->grpc_content_type = value_len >= 16 && memcmp(value, "application/grpc", 16) == 0 &&
                                  (value_len == 16 || value[16] == '+' || value[16] == ';');
        return 0;
    }
    if (name_is(name, name_len, "te")) {
        call->te_trailers = value_len == 8 && memcmp(value, "trailers", 8) == 0;
        return 0;
    }
    if (name_is(name, name_len, "grpc-encoding")) {
        call->encoding_unsupported = !(value_len == 8 && memcmp(value, "identity", 8) == 0);
        return 0;
    }
    if (name_is(name, name_len, "grpc-timeout")) {
        call->has_timeout = 1;
        call->timeout_malformed =
            grpc_timeout_parse((const char *)value, value_len, &call->timeout_ns) != 0;
        return 0;
    }
    if (name_len > 0 && name[0] == ':' && !name_is(name, name_len, ":path"))
        return 0;
    return grpc_header_list_add(&call->request_headers, (const char *)name, name_len,
                                (const char *)value, value_len);
}

/* Answers with a bare HTTP status (the request is not gRPC at all). */
static void call_reject_http(struct grpc_call *call, const char *http_status, int grpc_status,
                             const char *message)
{
    struct h2_header headers[4];
    char status_buf[12];

    snprintf(status_buf, sizeof(status_buf), "%d", grpc_status);
    headers[0] = (struct h2_header){":status", 7, http_status, strlen(http_status)};
    headers[1] = (struct h2_header){"grpc-status", 11, status_buf, strlen(status_buf)};
    headers[2] = (struct h2_header){"grpc-message", 12, message, strlen(message)};
    call->finished = call->headers_sent = call->trailers_sent = 1;
    call->status = grpc_status;
    call->door->rejected_calls++;
    h2_stream_respond(call->stream, headers, 3, 0);
    if (!call->half_closed)
        h2_stream_reset_after_end(call->stream, HTTP2_NO_ERROR);
}

static void call_stream_headers_done(void *data)
{
    struct grpc_call *call = data;
    const char *path = grpc_call_metadata(call, ":path");
    char message[256];

    if (!call->is_post) {
        call_reject_http(call, "405", GRPC_STATUS_UNIMPLEMENTED, "only POST is allowed");
        return;
    }
    if (!call->grpc_content_type) {
        call_reject_http(call, "415", GRPC_STATUS_UNKNOWN, "content-type must be application/grpc");
        return;
    }
    if (!call->te_trailers) {
        call_reject_http(call, "400", GRPC_STATUS_INTERNAL, "te: trailers is required");
        return;
    }
    call->entry = path ? door_find(call->door, path, strlen(path)) : NULL;
    if (!call->entry) {
        call->door->unknown_method_calls++;
        snprintf(message, sizeof(message), "unknown method %.200s", path ? path : "(none)");
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED, message);
        return;
    }
    call->entry->started++;
    if (call->encoding_unsupported) {
        grpc_call_add_trailer(call, "grpc-accept-encoding", (const uint8_t *)"identity", 8);
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "unsupported grpc-encoding");
        return;
    }
    if (call->timeout_malformed) {
        grpc_call_fail(call, GRPC_STATUS_INTERNAL, "malformed grpc-timeout");
        return;
    }
    if (call->has_timeout) {
        struct timeval tv;
        uint64_t us = call->timeout_ns / 1000;
        /* Beyond a day is as good as no deadline; keeps timeval sane. */
        if (us > 86400ull * 1000000ull)
            us = 86400ull * 1000000ull;
        tv.tv_sec = (time_t)(us / 1000000);
        tv.tv_usec = (suseconds_t)(us % 1000000);
        call->deadline = evtimer_new(call->server->base, on_deadline, call);
        if (call->deadline)
            event_add(call->deadline, &tv);
    }
    if (call->server->shutting_down) {
        grpc_call_fail(call, GRPC_STATUS_UNAVAILABLE, "server shutting down");
        return;
    }
    call->started = 1;
    if (call->entry->method->on_start)
        call->entry->method->on_start(call);
}

static int method_is_unary_request(const struct grpc_method *method)
{
    return method->kind == GRPC_METHOD_UNARY || method->kind == GRPC_METHOD_SERVER_STREAMING;
}

static void call_deliver(struct grpc_call *call, const uint8_t *bytes, size_t len)
{
    const struct grpc_method *method = call->entry->method;
    ProtobufCMessage *request;
    char why[256];

    if (call->server->request_check &&
        call->server->request_check(method->request_type, bytes, len, why, sizeof(why)) != 0) {
        grpc_call_fail(call, GRPC_STATUS_INVALID_ARGUMENT, why);
        return;
    }
    request = protobuf_c_message_unpack(method->request_type, NULL, len, bytes);
    if (!request) {
        grpc_call_fail(call, GRPC_STATUS_INTERNAL, "cannot parse the request message");
        return;
    }
    method->on_message(call, request);
    protobuf_c_message_free_unpacked(request, NULL);
}

static void call_stream_data(void *data, const uint8_t *bytes, size_t len)
{
    struct grpc_call *call = data;

    while (len > 0 && !call->finished && call->started) {
        size_t consumed;
        int rv = grpc_reader_feed(&call->reader, bytes, len, &consumed);
        bytes += consumed;
        len -= consumed;
        if (rv == GRPC_READER_NEED_MORE)
            break;
        if (rv == GRPC_READER_TOO_LARGE) {
            char message[128];
            snprintf(message, sizeof(message), "request message larger than the limit (%zu bytes)",
                     call->server->limits.max_recv_bytes);
            grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
            return;
        }
        if (rv == GRPC_READER_COMPRESSED) {
            grpc_call_fail(call, GRPC_STATUS_INTERNAL,
                           "compressed message without a supported grpc-encoding");
            return;
        }
        if (rv < 0) {
            grpc_call_fail(call, GRPC_STATUS_INTERNAL, "malformed message framing");
            return;
        }
        call->message_count++;
        if (method_is_unary_request(call->entry->method)) {
            if (call->message_count > 1) {
                grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED,
                               "more than one request message for a unary request");
                return;
            }
            size_t message_len;
            grpc_reader_message(&call->reader, &message_len);
            /* Keep the one request until the client half-closes. */
            call->unary_request = call->reader.body;
            call->unary_request_len = message_len;
            call->reader.body = NULL;
            grpc_reader_take(&call->reader);
        } else {
            size_t message_len;
            const uint8_t *message = grpc_reader_message(&call->reader, &message_len);
            call_deliver(call, message, message_len);
            grpc_reader_take(&call->reader);
        }
    }
}

static void call_stream_end(void *data)
{
    struct grpc_call *call = data;

    call->half_closed = 1;
    if (call->finished || !call->started)
        return;
    if (!grpc_reader_idle(&call->reader)) {
        grpc_call_fail(call, GRPC_STATUS_INTERNAL, "the request ended inside a message");
        return;
    }
    if (method_is_unary_request(call->entry->method)) {
        if (call->message_count != 1) {
            grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED,
                           "no request message for a unary request");
            return;
        }
        call_deliver(call, call->unary_request ? call->unary_request : (const uint8_t *)"",
                     call->unary_request_len);
        free(call->unary_request);
        call->unary_request = NULL;
        return;
    }
    if (call->entry->method->on_half_close)
        call->entry->method->on_half_close(call);
}

/* Drops LEN sent bytes from the queue, keeping track of where the message
 * at its head ends so a layer-made finish never cuts a message in half. */
static void call_consume(struct grpc_call *call, size_t len)
{
    while (len > 0) {
        if (call->out_partial == 0) {
            const uint8_t *h = call->out.data + call->out.start;
            call->out_partial = GRPC_FRAME_HEADER_LEN + ((size_t)h[1] << 24 | (size_t)h[2] << 16 |
                                                         (size_t)h[3] << 8 | h[4]);
        }
        size_t take = len < call->out_partial ? len : call->out_partial;
        byte_queue_consume(&call->out, take);
        call->out_partial -= take;
        len -= take;
    }
}

static ssize_t call_stream_read(void *data, uint8_t *buf, size_t len, uint32_t *flags)
{
    struct grpc_call *call = data;
    size_t available = byte_queue_length(&call->out);

    if (available == 0 && !call->finished && call->started && call->entry->method->on_writable) {
        call->entry->method->on_writable(call);
        available = byte_queue_length(&call->out);
    }
    if (available == 0 && !call->finished) {
        call->deferred = 1;
        return H2_READ_DEFERRED;
    }
    if (len > available)
        len = available;
    if (len > 0) { /* a finished call with nothing queued may have no buffer */
        memcpy(buf, call->out.data + call->out.start, len);
        call_consume(call, len);
    }
    if (byte_queue_length(&call->out) == 0 && call->finished && !call->trailers_sent) {
        *flags |= H2_READ_EOF;
        grpc_call_send_trailers(call);
    }
    return (ssize_t)len;
}

static void call_stream_close(void *data, uint32_t error_code)
{
    struct grpc_call *call = data;
    struct grpc_server *server = call->server;

    call->stream = NULL;
    if (!call->trailers_sent) {
        call->cancelled = 1;
        grpc_call_count_status(call, GRPC_STATUS_CANCELLED);
    }
    if (call->deadline) {
        event_free(call->deadline);
        call->deadline = NULL;
    }
    if (call->started && call->entry->method->on_close)
        call->entry->method->on_close(call);
    if (call->prev)
        call->prev->next = call->next;
    else
        server->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    server->call_count--;
    grpc_reader_free(&call->reader);
    free(call->unary_request);
    free(call->status_message);
    byte_queue_free(&call->out);
    grpc_header_list_free(&call->request_headers);
    grpc_header_list_free(&call->initial_metadata);
    grpc_header_list_free(&call->trailing_metadata);
    free(call);
}

static const struct h2_handler grpc_h2_handler = {
    .stream_open = call_stream_open,
    .stream_header = call_stream_header,
    .stream_headers_done = call_stream_headers_done,
    .stream_data = call_stream_data,
    .stream_end = call_stream_end,
    .stream_read = call_stream_read,
    .stream_close = call_stream_close,
};

int grpc_door_listen(struct grpc_door *door, const char *host_port, const struct h2_tls_config *tls,
                     char *err, size_t err_size)
{
    door->listener = h2_listen(door->server->h2, door->name, host_port, tls, &grpc_h2_handler, door,
                               err, err_size);
    return door->listener ? 0 : -1;
}

const char *grpc_door_address(const struct grpc_door *door)
{
    return door->listener ? h2_listener_address(door->listener) : "";
}

void grpc_server_shutdown(struct grpc_server *server)
{
    server->shutting_down = 1;
    for (struct grpc_call *call = server->calls; call; call = call->next)
        if (call->started && !call->finished && call->entry->method->kind != GRPC_METHOD_UNARY)
            grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, "server shutting down");
    h2_server_drain(server->h2);
}
