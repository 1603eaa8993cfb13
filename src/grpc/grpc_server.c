/* grpc_server: calls, method tables and doors on top of h2. */
#include "grpc/grpc.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "common/byte_queue.h"
#include "h2/h2.h"

#define HTTP2_NO_ERROR 0x0
#define HTTP2_CANCEL   0x8

struct door_method {
    const struct grpc_method *method;
    size_t path_len;
    uint64_t started;
    uint64_t by_status[GRPC_STATUS_COUNT];
};

struct grpc_door {
    struct grpc_server *server;
    char name[16];
    void *door_data;
    struct door_method *methods;
    size_t method_count;
    size_t method_cap;
    uint64_t unknown_method_calls;
    uint64_t rejected_calls;
    struct h2_listener *listener;
    struct grpc_door *next;
};

struct grpc_server {
    struct event_base *base;
    struct h2_server *h2;
    struct grpc_limits limits;
    struct grpc_door *doors;
    struct grpc_call *calls;
    size_t call_count;
    int shutting_down;
};

/* Header name/value pairs kept as offsets into one arena. */
struct header_list {
    char *arena;
    size_t len;
    size_t cap;
    size_t count;
};

struct grpc_call {
    struct grpc_server *server;
    struct grpc_door *door;
    struct h2_stream *stream; /* NULL once HTTP/2 closed it */
    struct door_method *entry;
    struct grpc_call *prev, *next;

    struct header_list request_headers;
    unsigned is_post : 1;
    unsigned te_trailers : 1;
    unsigned grpc_content_type : 1;
    unsigned encoding_unsupported : 1;
    unsigned timeout_malformed : 1;
    unsigned has_timeout : 1;
    unsigned started : 1;     /* passed header validation: handler owns it */
    unsigned half_closed : 1; /* client sent END_STREAM */
    unsigned headers_sent : 1;
    unsigned finished : 1;
    unsigned trailers_sent : 1;
    unsigned cancelled : 1;
    unsigned deferred : 1;
    unsigned in_handler : 1;
    uint64_t timeout_ns;

    struct grpc_reader reader;
    uint8_t *unary_request;
    size_t unary_request_len;
    unsigned message_count;

    int status;
    char *status_message;
    struct header_list initial_metadata;
    struct header_list trailing_metadata;
    struct byte_queue out;
    size_t out_partial; /* bytes of the message at the queue's head still to go */
    struct event *deadline;
    void *user;
};

/* --- Small containers ---------------------------------------------------- */

static int header_list_add(struct header_list *list, const char *name, size_t name_len,
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
static int header_list_next(const struct header_list *list, size_t *offset, const char **name,
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

static void header_list_free(struct header_list *list)
{
    free(list->arena);
    memset(list, 0, sizeof(*list));
}

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

/* 1 when SERVICE appears in a method registered before DOOR's method INDEX. */
static int service_seen_before(const struct grpc_server *server, const struct grpc_door *door,
                               size_t index, const char *service, size_t len)
{
    for (const struct grpc_door *d = server->doors; d; d = d->next) {
        size_t limit = d == door ? index : d->method_count;
        for (size_t j = 0; j < limit; j++) {
            size_t other_len;
            const char *other = path_service(d->methods[j].method->path, &other_len);
            if (other_len == len && memcmp(other, service, len) == 0)
                return 1;
        }
        if (d == door)
            return 0;
    }
    return 0;
}

void grpc_server_each_service(const struct grpc_server *server,
                              void (*fn)(const char *service, size_t len, void *arg), void *arg)
{
    for (const struct grpc_door *door = server->doors; door; door = door->next) {
        for (size_t i = 0; i < door->method_count; i++) {
            size_t len;
            const char *service = path_service(door->methods[i].method->path, &len);
            if (!service_seen_before(server, door, i, service, len))
                fn(service, len, arg);
        }
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

/* --- Sending ------------------------------------------------------------- */

static void call_count_status(struct grpc_call *call, int status)
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
    while (n < max && header_list_next(extra, &offset, &name, &value))
        headers[n++] = (struct h2_header){name, strlen(name), value, strlen(value)};
    return n;
}

static void call_send_trailers(struct grpc_call *call)
{
    struct h2_header headers[32];
    char status_buf[12];
    char message_buf[4096];
    size_t n = status_headers(call, headers, 32, status_buf, message_buf, sizeof(message_buf),
                              &call->trailing_metadata);

    call->trailers_sent = 1;
    call_count_status(call, call->status);
    if (call->stream)
        h2_stream_trailers(call->stream, headers, n);
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
    headers[n++] = (struct h2_header){":status", 7, "200", 3};
    headers[n++] = (struct h2_header){"content-type", 12, "application/grpc", 16};
    while (n < 16 && header_list_next(&call->initial_metadata, &offset, &name, &value))
        headers[n++] = (struct h2_header){name, strlen(name), value, strlen(value)};
    if (trailers_only) {
        n += status_headers(call, headers + n, 40 - n, status_buf, message_buf, sizeof(message_buf),
                            &call->trailing_metadata);
        call->trailers_sent = 1;
        call_count_status(call, call->status);
    }
    call->headers_sent = 1;
    return h2_stream_respond(call->stream, headers, n, !trailers_only);
}

int grpc_call_send_encoded(struct grpc_call *call, const uint8_t *prefix, size_t prefix_len,
                           const uint8_t *body, size_t body_len)
{
    uint8_t *at;

    if (call->finished || !call->stream)
        return -1;
    if (prefix_len + body_len > UINT32_MAX)
        return -1;
    at = byte_queue_reserve(&call->out, GRPC_FRAME_HEADER_LEN + prefix_len + body_len);
    if (!at)
        return -1;
    grpc_frame_header(at, (uint32_t)(prefix_len + body_len));
    if (prefix_len)
        memcpy(at + GRPC_FRAME_HEADER_LEN, prefix, prefix_len);
    if (body_len)
        memcpy(at + GRPC_FRAME_HEADER_LEN + prefix_len, body, body_len);
    if (!call->headers_sent)
        return call_send_headers(call, 0);
    if (call->deferred) {
        call->deferred = 0;
        h2_stream_resume(call->stream);
    }
    return 0;
}

int grpc_call_send(struct grpc_call *call, const ProtobufCMessage *message)
{
    size_t len = protobuf_c_message_get_packed_size(message);
    uint8_t *at;

    if (call->finished || !call->stream || len > UINT32_MAX)
        return -1;
    at = byte_queue_reserve(&call->out, GRPC_FRAME_HEADER_LEN + len);
    if (!at)
        return -1;
    grpc_frame_header(at, (uint32_t)len);
    protobuf_c_message_pack(message, at + GRPC_FRAME_HEADER_LEN);
    if (!call->headers_sent)
        return call_send_headers(call, 0);
    if (call->deferred) {
        call->deferred = 0;
        h2_stream_resume(call->stream);
    }
    return 0;
}

int grpc_call_start_response(struct grpc_call *call)
{
    if (call->finished || !call->stream)
        return -1;
    if (call->headers_sent)
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
        size_t n = grpc_base64_encode(value, len, encoded, cap);
        rv = header_list_add(list, name, name_len, encoded, n);
        free(encoded);
        return rv;
    }
    return header_list_add(list, name, name_len, (const char *)value, len);
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
    if (!call->stream)
        return;
    if (!call->headers_sent) {
        call_send_headers(call, 1);
    } else if (call->deferred) {
        call->deferred = 0;
        h2_stream_resume(call->stream);
    }
    /* A client still sending after we answered learns to stop. */
    if (!call->half_closed)
        h2_stream_reset_after_end(call->stream, HTTP2_NO_ERROR);
}

/* The layer itself ends the call: queued output is dropped. */
static void call_fail(struct grpc_call *call, int status, const char *message)
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
    return call->stream ? h2_stream_connection_backlog(call->stream) : 0;
}

void grpc_call_want_writable(struct grpc_call *call)
{
    if (call->stream && call->deferred && call->headers_sent) {
        call->deferred = 0;
        h2_stream_resume(call->stream);
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

const char *grpc_call_path(const struct grpc_call *call)
{
    return call->entry ? call->entry->method->path : "";
}

const char *grpc_call_metadata(const struct grpc_call *call, const char *name)
{
    size_t offset = 0;
    const char *n, *v;

    while (header_list_next(&call->request_headers, &offset, &n, &v))
        if (strcmp(n, name) == 0)
            return v;
    return NULL;
}

/* --- Receiving ----------------------------------------------------------- */

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct grpc_call *call = arg;

    call_fail(call, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline exceeded");
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
    return header_list_add(&call->request_headers, (const char *)name, name_len,
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
        call_fail(call, GRPC_STATUS_UNIMPLEMENTED, message);
        return;
    }
    call->entry->started++;
    if (call->encoding_unsupported) {
        grpc_call_add_trailer(call, "grpc-accept-encoding", (const uint8_t *)"identity", 8);
        call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "unsupported grpc-encoding");
        return;
    }
    if (call->timeout_malformed) {
        call_fail(call, GRPC_STATUS_INTERNAL, "malformed grpc-timeout");
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
        call_fail(call, GRPC_STATUS_UNAVAILABLE, "server shutting down");
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
    ProtobufCMessage *request = protobuf_c_message_unpack(method->request_type, NULL, len, bytes);

    if (!request) {
        call_fail(call, GRPC_STATUS_INTERNAL, "cannot parse the request message");
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
            call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
            return;
        }
        if (rv == GRPC_READER_COMPRESSED) {
            call_fail(call, GRPC_STATUS_INTERNAL,
                      "compressed message without a supported grpc-encoding");
            return;
        }
        if (rv < 0) {
            call_fail(call, GRPC_STATUS_INTERNAL, "malformed message framing");
            return;
        }
        call->message_count++;
        if (method_is_unary_request(call->entry->method)) {
            if (call->message_count > 1) {
                call_fail(call, GRPC_STATUS_UNIMPLEMENTED,
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
        call_fail(call, GRPC_STATUS_INTERNAL, "the request ended inside a message");
        return;
    }
    if (method_is_unary_request(call->entry->method)) {
        if (call->message_count != 1) {
            call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "no request message for a unary request");
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
        call_send_trailers(call);
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
        call_count_status(call, GRPC_STATUS_CANCELLED);
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
    header_list_free(&call->request_headers);
    header_list_free(&call->initial_metadata);
    header_list_free(&call->trailing_metadata);
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
