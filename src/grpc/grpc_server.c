/* grpc_server: doors and their method tables, listening, metrics and the
 * graceful stop.  The h2 handler itself is in grpc_recv.c. */
#include "grpc/grpc.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_internal.h"
#include "h2/h2.h"
#include "http1/http1.h"

/* --- Server, doors and method tables ------------------------------------ */

struct grpc_server *grpc_server_new(struct event_base *base, struct h2_server *h2,
                                    const struct grpc_limits *limits)
{
    struct grpc_server *server = calloc(1, sizeof(*server));

    if (!server)
        return NULL;
    list_init(&server->calls);
    server->base = base;
    server->h2 = h2;
    server->limits = *limits;
    if (!server->limits.request_timeout_ms)
        server->limits.request_timeout_ms = GRPC_DEFAULT_REQUEST_TIMEOUT_MS;
    server->request_sweep = grpc_request_sweep_new(server);
    if (!server->request_sweep) {
        free(server);
        return NULL;
    }
    return server;
}

void grpc_server_free(struct grpc_server *server)
{
    if (!server)
        return;
    event_free(server->request_sweep);
    while (server->doors) {
        struct grpc_door *door = server->doors;
        server->doors = door->next;
        http1_server_free(door->http1);
        grpc_http_door_free(door);
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

struct door_method *grpc_door_find(const struct grpc_door *door, const char *path, size_t len)
{
    for (size_t i = 0; i < door->method_count; i++)
        if (door->methods[i].path_len == len &&
            memcmp(door->methods[i].method->path, path, len) == 0)
            return &door->methods[i];
    return NULL;
}

void grpc_door_set_kind(struct grpc_door *door, int kind)
{
    door->kind = kind;
}

void grpc_door_set_authenticator(struct grpc_door *door, const struct grpc_authenticator *auth)
{
    door->auth = auth;
}

int grpc_door_register(struct grpc_door *door, const struct grpc_method *method)
{
    size_t len = strlen(method->path);

    if (grpc_door_find(door, method->path, len))
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
    return grpc_door_find(door, path, strlen(path)) != NULL;
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

/* The calls the layer refused or cut to keep its bounds. */
static void door_write_limit_metrics(const struct grpc_server *server, FILE *out)
{
    fputs("# HELP agenthub_grpc_header_refusals_total calls refused from their request headers "
          "(no or a bad caller), by status.\n"
          "# TYPE agenthub_grpc_header_refusals_total counter\n"
          "# HELP agenthub_grpc_send_queue_cuts_total calls ended RESOURCE_EXHAUSTED: send queue "
          "past its hard cap.\n"
          "# TYPE agenthub_grpc_send_queue_cuts_total counter\n"
          "# HELP agenthub_grpc_request_timeouts_total calls cancelled: first request message "
          "not in within the timeout.\n"
          "# TYPE agenthub_grpc_request_timeouts_total counter\n"
          "# HELP agenthub_grpc_recv_pauses_total request delivery paused: send queue over its "
          "bound.\n"
          "# TYPE agenthub_grpc_recv_pauses_total counter\n"
          "# HELP agenthub_grpc_compressed_messages_total messages that crossed the wire "
          "compressed, by direction and grpc-encoding.\n"
          "# TYPE agenthub_grpc_compressed_messages_total counter\n"
          "# HELP agenthub_grpc_decompress_refusals_total calls ended: a request message that "
          "would not inflate within the receive limit, or not inflate at all.\n"
          "# TYPE agenthub_grpc_decompress_refusals_total counter\n",
          out);
    for (const struct grpc_door *door = server->doors; door; door = door->next) {
        for (int s = 0; s < GRPC_STATUS_COUNT; s++)
            if (door->header_refusals[s])
                fprintf(
                    out, "agenthub_grpc_header_refusals_total{door=\"%s\",status=\"%s\"} %llu\n",
                    door->name, grpc_status_name(s), (unsigned long long)door->header_refusals[s]);
        fprintf(out,
                "agenthub_grpc_send_queue_cuts_total{door=\"%s\"} %llu\n"
                "agenthub_grpc_request_timeouts_total{door=\"%s\"} %llu\n"
                "agenthub_grpc_recv_pauses_total{door=\"%s\"} %llu\n",
                door->name, (unsigned long long)door->send_cap_cuts, door->name,
                (unsigned long long)door->request_timeouts, door->name,
                (unsigned long long)door->recv_pauses);
        for (int e = GRPC_ENCODING_GZIP; e < GRPC_ENCODING_UNSUPPORTED; e++)
            fprintf(out,
                    "agenthub_grpc_compressed_messages_total{door=\"%s\",direction=\"received\","
                    "encoding=\"%s\"} %llu\n"
                    "agenthub_grpc_compressed_messages_total{door=\"%s\",direction=\"sent\","
                    "encoding=\"%s\"} %llu\n",
                    door->name, grpc_encoding_name((enum grpc_encoding)e),
                    (unsigned long long)door->compressed_received[e], door->name,
                    grpc_encoding_name((enum grpc_encoding)e),
                    (unsigned long long)door->compressed_sent[e]);
        fprintf(out, "agenthub_grpc_decompress_refusals_total{door=\"%s\"} %llu\n", door->name,
                (unsigned long long)door->decompress_refusals);
    }
}

/* Calls by protocol (gRPC, gRPC-Web, ...) and transport (h2, http1). */
static void door_write_protocol_metrics(const struct grpc_server *server, FILE *out)
{
    static const char *const transports[GRPC_TRANSPORT_COUNT] = {"h2", "http1"};

    fputs("# HELP agenthub_grpc_protocol_calls_total calls whose headers were accepted, by door, "
          "protocol and transport.\n"
          "# TYPE agenthub_grpc_protocol_calls_total counter\n",
          out);
    for (const struct grpc_door *door = server->doors; door; door = door->next)
        for (int p = 0; p < GRPC_PROTOCOL_COUNT; p++)
            for (int t = 0; t < GRPC_TRANSPORT_COUNT; t++)
                fprintf(out,
                        "agenthub_grpc_protocol_calls_total{door=\"%s\",protocol=\"%s\","
                        "transport=\"%s\"} %llu\n",
                        door->name, grpc_protocol_name((enum grpc_protocol_id)p), transports[t],
                        (unsigned long long)door->protocol_calls[p][t]);
}

/* HTTP/1.1 connections of each door. */
static void door_write_http1_metrics(const struct grpc_server *server, FILE *out)
{
    fputs("# HELP agenthub_http1_connections_open HTTP/1.1 connections open, by door.\n"
          "# TYPE agenthub_http1_connections_open gauge\n"
          "# HELP agenthub_http1_requests_total HTTP/1.1 requests whose header block was read, by "
          "door.\n"
          "# TYPE agenthub_http1_requests_total counter\n"
          "# HELP agenthub_http1_request_timeouts_total HTTP/1.1 connections closed: a request "
          "header block not complete within the header timeout.\n"
          "# TYPE agenthub_http1_request_timeouts_total counter\n"
          "# HELP agenthub_http1_disconnects_total HTTP/1.1 responses cut short: the client "
          "went away.\n"

          "# TYPE agenthub_http1_disconnects_total counter\n"
          "# HELP agenthub_http1_bad_requests_total HTTP/1.1 requests refused as malformed or "
          "over a size bound (400, 413, 431, 505).\n"
          "# TYPE agenthub_http1_bad_requests_total counter\n"
          "# HELP agenthub_http1_budget_refusals_total HTTP/1.1 requests refused 503: request "
          "bodies held across the door over the server's receive budget.\n"
          "# TYPE agenthub_http1_budget_refusals_total counter\n"
          "# HELP agenthub_http1_recv_held_bytes HTTP/1.1 request body bytes held, by door.\n"
          "# TYPE agenthub_http1_recv_held_bytes gauge\n"
          "# HELP agenthub_http_cors_preflights_total CORS preflights answered, by door and "
          "whether the origin was allowed.\n"
          "# TYPE agenthub_http_cors_preflights_total counter\n"
          "# HELP agenthub_http_plain_answers_total requests answered by the door's plain HTTP "
          "responder.\n"
          "# TYPE agenthub_http_plain_answers_total counter\n",
          out);
    for (const struct grpc_door *door = server->doors; door; door = door->next) {
        const struct http1_stats *st;
        fprintf(out,
                "agenthub_http_cors_preflights_total{door=\"%s\",answer=\"refused\"} %llu\n"
                "agenthub_http_cors_preflights_total{door=\"%s\",answer=\"allowed\"} %llu\n"
                "agenthub_http_plain_answers_total{door=\"%s\"} %llu\n",
                door->name, (unsigned long long)door->cors_preflights[0], door->name,
                (unsigned long long)door->cors_preflights[1], door->name,
                (unsigned long long)door->plain_answers);
        if (!door->http1)
            continue;
        st = http1_server_stats(door->http1);
        fprintf(out,
                "agenthub_http1_connections_open{door=\"%s\"} %llu\n"
                "agenthub_http1_requests_total{door=\"%s\"} %llu\n"
                "agenthub_http1_request_timeouts_total{door=\"%s\"} %llu\n"
                "agenthub_http1_disconnects_total{door=\"%s\"} %llu\n"
                "agenthub_http1_bad_requests_total{door=\"%s\"} %llu\n"
                "agenthub_http1_budget_refusals_total{door=\"%s\"} %llu\n"
                "agenthub_http1_recv_held_bytes{door=\"%s\"} %llu\n",
                door->name, (unsigned long long)st->connections_open, door->name,
                (unsigned long long)st->requests_total, door->name,
                (unsigned long long)st->request_timeouts, door->name,
                (unsigned long long)st->disconnects, door->name,
                (unsigned long long)st->bad_requests, door->name,
                (unsigned long long)st->budget_refusals, door->name,
                (unsigned long long)st->recv_held);
    }
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
    door_write_limit_metrics(server, out);
    door_write_protocol_metrics(server, out);
    door_write_http1_metrics(server, out);
    fprintf(out,
            "# HELP agenthub_grpc_calls_open gRPC calls in flight.\n"
            "# TYPE agenthub_grpc_calls_open gauge\n"
            "agenthub_grpc_calls_open %zu\n",
            server->call_count);
}

static void door_http1_released(void *listener)
{
    h2_listener_release(listener);
}

/* The door's listener found an HTTP/1.1 client: http1 takes the socket. */
static void door_adopt_http1(void *arg, struct h2_listener *listener, int fd,
                             struct bufferevent *bev)
{
    struct grpc_door *door = arg;

    if (http1_server_adopt(door->http1, fd, bev, door_http1_released, listener) != 0)
        h2_listener_release(listener);
}

/* HTTP/1.1 bounds from the HTTP/2 ones: the same header size and header
 * timeout, a body of one request message (text mode's base64 included),
 * and a stalled response write closes after the idle timeout. */
static struct http1_limits door_http1_limits(const struct grpc_door *door)
{
    const struct h2_limits *h2 = h2_server_limits(door->server->h2);
    size_t message = door->server->limits.max_recv_bytes + GRPC_FRAME_HEADER_LEN;
    struct http1_limits limits = {
        .max_header_bytes = h2->max_header_list_bytes,
        .max_body_bytes = message / 3 * 4 + 8,
        .request_timeout_ms = h2->header_timeout_ms,
        .write_timeout_ms = h2->idle_timeout_ms,
        .server_recv_budget = h2->server_recv_budget,
    };
    return limits;
}

void grpc_door_serve_http1(struct grpc_door *door)
{
    door->serve_http1 = 1;
}

int grpc_door_listen(struct grpc_door *door, const char *host_port, const struct h2_tls_config *tls,
                     char *err, size_t err_size)
{
    door->listener = h2_listen(door->server->h2, door->name, host_port, tls, &grpc_h2_handler, door,
                               err, err_size);
    if (!door->listener)
        return -1;
    if (door->serve_http1) {
        struct http1_limits limits = door_http1_limits(door);
        door->http1 = http1_server_new(door->server->base, &limits, &grpc_http1_handler, door);
        if (!door->http1) {
            snprintf(err, err_size, "out of memory");
            return -1;
        }
        h2_listener_set_fallback(door->listener, door_adopt_http1, door);
    }
    return 0;
}

const char *grpc_door_address(const struct grpc_door *door)
{
    return door->listener ? h2_listener_address(door->listener) : "";
}

void grpc_server_shutdown(struct grpc_server *server)
{
    struct list_node *node;

    server->shutting_down = 1;
    list_for_each (node, &server->calls) {
        struct grpc_call *call = list_entry(node, struct grpc_call, link);
        if (call->started && !call->finished && call->entry->method->kind != GRPC_METHOD_UNARY)
            grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, "server shutting down");
    }
    h2_server_drain(server->h2);
}
