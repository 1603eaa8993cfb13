/* fake_h2: see fake_h2.h. */
#include "fake_h2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_wire.h"

/* Body bytes one stream may send per pump round: what a flow-control
 * window would let through before the client reads. */
#define FAKE_WINDOW (256u << 10)

struct h2_listener {
    struct h2_server *server;
    char name[16];
    const struct h2_handler *handler;
    void *data;
    struct h2_listener *next;
};

struct h2_stream {
    struct h2_listener *listener;
    void *data; /* the handler's */
    uint32_t id;
    struct h2_stream *next;
    unsigned responded : 1;
    unsigned has_body : 1;
    unsigned waiting : 1; /* stream_read said deferred; until resume */
    unsigned eof : 1;     /* the body ended */
    unsigned in_read : 1;
    unsigned trailers : 1;
    unsigned client_ended : 1;
    unsigned reset : 1; /* a reset is pending */
    unsigned reset_after_end : 1;
    unsigned input_paused : 1; /* the gRPC layer asked for no more credit */
    uint32_t reset_code;
    size_t received;         /* request body bytes handed to the handler */
    size_t released;         /* of which the handler released (SIZE_MAX: all) */
    struct grpc_reader body; /* checks the response's gRPC framing */
    size_t messages;         /* response messages */
    char path[96];           /* for FUZZ_TRACE */
    char status[200];
};

struct h2_server {
    struct event_base *base;
    struct h2_listener *listeners;
    struct h2_stream *streams;
    uint32_t next_id;
    size_t stream_count;
    struct h2_stats stats;
    struct h2_limits limits;
};

struct h2_server *h2_server_new(struct event_base *base, const struct h2_limits *limits)
{
    struct h2_server *server = calloc(1, sizeof(*server));

    if (server) {
        server->base = base;
        server->limits = *limits;
    }
    return server;
}

static struct h2_stream *find(struct h2_server *server, uint32_t id)
{
    for (struct h2_stream *s = server->streams; s; s = s->next)
        if (s->id == id)
            return s;
    return NULL;
}

/* FUZZ_TRACE=1 prints each stream's method and outcome on stderr when it
 * closes, to see what an input reaches. */
static int tracing(void)
{
    static int on = -1;

    if (on < 0)
        on = getenv("FUZZ_TRACE") != NULL;
    return on;
}

/* Keeps the status fields of a response for the trace. */
static void trace_status(struct h2_stream *stream, const struct h2_header *headers, size_t count)
{
    if (!tracing())
        return;
    for (size_t i = 0; i < count; i++)
        if (headers[i].name_len > 5 && memcmp(headers[i].name, "grpc-", 5) == 0) {
            size_t len = strlen(stream->status);
            snprintf(stream->status + len, sizeof(stream->status) - len, " %.*s=%.*s",
                     (int)headers[i].name_len, headers[i].name, (int)headers[i].value_len,
                     headers[i].value);
        }
}

/* Tells the handler the stream is gone and frees it. */
static void stream_close(struct h2_server *server, struct h2_stream *stream, uint32_t code)
{
    struct h2_stream **at = &server->streams;

    while (*at && *at != stream)
        at = &(*at)->next;
    if (!*at)
        abort();
    *at = stream->next;
    server->stream_count--;
    if (tracing())
        fprintf(stderr, "stream %u %s:%s, %zu messages, close code %u\n", stream->id, stream->path,
                stream->status[0] ? stream->status : " (no status)", stream->messages, code);
    stream->listener->handler->stream_close(stream->data, code);
    grpc_reader_free(&stream->body);
    free(stream);
}

void h2_server_free(struct h2_server *server)
{
    if (!server)
        return;
    while (server->streams)
        stream_close(server, server->streams, 0x8 /* CANCEL */);
    while (server->listeners) {
        struct h2_listener *l = server->listeners;
        server->listeners = l->next;
        free(l);
    }
    free(server);
}

struct h2_listener *h2_listen(struct h2_server *server, const char *name, const char *host_port,
                              const struct h2_tls_config *tls, const struct h2_handler *handler,
                              void *listener_data, char *err, size_t err_size)
{
    struct h2_listener *l = calloc(1, sizeof(*l));

    if (!l) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    l->server = server;
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->handler = handler;
    l->data = listener_data;
    l->next = server->listeners;
    server->listeners = l;
    return l;
}

/* The fake has no sockets: nothing is ever handed over. */
void h2_listener_set_fallback(struct h2_listener *listener, h2_fallback_fn fn, void *arg)
{
}

void h2_listener_release(struct h2_listener *listener)
{
}

const struct h2_limits *h2_server_limits(const struct h2_server *server)
{
    return &server->limits;
}

const char *h2_listener_address(const struct h2_listener *listener)
{
    return "fuzz:0";
}

void h2_server_drain(struct h2_server *server)
{
}

size_t h2_server_connection_count(const struct h2_server *server)
{
    return server->streams ? 1 : 0;
}

const struct h2_stats *h2_server_stats(const struct h2_server *server)
{
    return &server->stats;
}

static void check_headers(const struct h2_header *headers, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        /* nghttp2 refuses a NUL, CR or LF in a field: our layer must not
         * produce one from client input. */
        if (memchr(headers[i].value, '\0', headers[i].value_len) ||
            memchr(headers[i].value, '\r', headers[i].value_len) ||
            memchr(headers[i].value, '\n', headers[i].value_len) || headers[i].name_len == 0)
            abort();
    }
}

int h2_stream_respond(struct h2_stream *stream, const struct h2_header *headers, size_t count,
                      int has_body)
{
    if (stream->responded)
        abort(); /* nghttp2 allows one response */
    check_headers(headers, count);
    stream->responded = 1;
    stream->has_body = has_body != 0;
    if (!has_body)
        trace_status(stream, headers, count);
    return 0;
}

int h2_stream_trailers(struct h2_stream *stream, const struct h2_header *headers, size_t count)
{
    if (!stream->has_body || !(stream->in_read || stream->eof) || stream->trailers)
        abort();
    check_headers(headers, count);
    stream->trailers = 1;
    trace_status(stream, headers, count);
    return 0;
}

void h2_stream_resume(struct h2_stream *stream)
{
    stream->waiting = 0;
}

/* As h2: releasing more than is held releases what is held. */
void h2_stream_release(struct h2_stream *stream, size_t len)
{
    size_t held = stream->received - stream->released;

    stream->released += len > held ? held : len;
}

void h2_stream_pause_input(struct h2_stream *stream, int paused)
{
    stream->input_paused = paused != 0;
}

void h2_stream_reset(struct h2_stream *stream, uint32_t error_code)
{
    if (!stream->reset) {
        stream->reset = 1;
        stream->reset_code = error_code;
    }
}

void h2_stream_reset_after_end(struct h2_stream *stream, uint32_t error_code)
{
    stream->reset_after_end = 1;
    stream->reset_code = error_code;
}

const char *h2_stream_listener_name(const struct h2_stream *stream)
{
    return stream->listener->name;
}

size_t h2_stream_connection_backlog(const struct h2_stream *stream)
{
    return 0;
}

struct h2_listener *fake_h2_listener(struct h2_server *server, const char *name)
{
    for (struct h2_listener *l = server->listeners; l; l = l->next)
        if (strcmp(l->name, name) == 0)
            return l;
    return NULL;
}

uint32_t fake_h2_open(struct h2_server *server, struct h2_listener *listener)
{
    struct h2_stream *stream = calloc(1, sizeof(*stream));

    if (!stream)
        return 0;
    stream->listener = listener;
    stream->id = ++server->next_id;
    grpc_reader_init(&stream->body, 64u << 20);
    stream->data = listener->handler->stream_open(listener->data, stream);
    if (!stream->data) {
        grpc_reader_free(&stream->body);
        free(stream);
        return 0;
    }
    stream->next = server->streams;
    server->streams = stream;
    server->stream_count++;
    return stream->id;
}

/* The stream when the client may still act on it. */
static struct h2_stream *client_side(struct h2_server *server, uint32_t id)
{
    struct h2_stream *stream = find(server, id);

    return stream && !stream->reset ? stream : NULL;
}

int fake_h2_header(struct h2_server *server, uint32_t id, const char *name, const char *value)
{
    struct h2_stream *stream = client_side(server, id);

    if (!stream)
        return -1;
    if (strcmp(name, ":path") == 0)
        snprintf(stream->path, sizeof(stream->path), "%s", value);
    if (stream->listener->handler->stream_header(stream->data, (const uint8_t *)name, strlen(name),
                                                 (const uint8_t *)value, strlen(value)) != 0)
        h2_stream_reset(stream, H2_PROTOCOL_ERROR);
    return 0;
}

int fake_h2_headers_done(struct h2_server *server, uint32_t id)
{
    struct h2_stream *stream = client_side(server, id);

    if (!stream)
        return -1;
    stream->listener->handler->stream_headers_done(stream->data);
    return 0;
}

int fake_h2_data(struct h2_server *server, uint32_t id, const uint8_t *data, size_t len)
{
    struct h2_stream *stream = client_side(server, id);

    if (!stream || stream->client_ended)
        return -1;
    server->stats.bytes_in += len;
    stream->received += len;
    stream->listener->handler->stream_data(stream->data, data, len);
    return 0;
}

int fake_h2_end(struct h2_server *server, uint32_t id)
{
    struct h2_stream *stream = client_side(server, id);

    if (!stream || stream->client_ended)
        return -1;
    stream->client_ended = 1;
    stream->listener->handler->stream_end(stream->data);
    return 0;
}

void fake_h2_cancel(struct h2_server *server, uint32_t id)
{
    struct h2_stream *stream = find(server, id);

    if (stream)
        stream_close(server, stream, 0x8 /* CANCEL */);
}

int fake_h2_alive(struct h2_server *server, uint32_t id)
{
    return find(server, id) != NULL;
}

size_t fake_h2_stream_count(const struct h2_server *server)
{
    return server->stream_count;
}

/* Checks that BYTES continue a well-framed gRPC body. */
static void check_body(struct h2_stream *stream, const uint8_t *bytes, size_t len)
{
    while (len > 0) {
        size_t consumed;
        int rv = grpc_reader_feed(&stream->body, bytes, len, &consumed);
        if (rv < 0)
            abort();
        bytes += consumed;
        len -= consumed;
        if (rv == GRPC_READER_MESSAGE) {
            stream->messages++;
            grpc_reader_take(&stream->body);
        } else if (consumed == 0)
            abort();
    }
}

/* One send round for STREAM.  Returns 1 when it was closed. */
static int pump_stream(struct h2_server *server, struct h2_stream *stream)
{
    static uint8_t buf[16384];
    size_t sent = 0;
    int ended;

    while (stream->responded && stream->has_body && !stream->eof && !stream->waiting &&
           !stream->reset && sent < FAKE_WINDOW) {
        uint32_t flags = 0;
        ssize_t n;
        stream->in_read = 1;
        n = stream->listener->handler->stream_read(stream->data, buf, sizeof(buf), &flags);
        stream->in_read = 0;
        if (n == H2_READ_DEFERRED) {
            stream->waiting = 1;
            break;
        }
        if (n == H2_READ_ERROR) {
            h2_stream_reset(stream, H2_INTERNAL_ERROR);
            break;
        }
        if (n < 0 || (size_t)n > sizeof(buf))
            abort();
        check_body(stream, buf, (size_t)n);
        sent += (size_t)n;
        server->stats.bytes_out += (size_t)n;
        if (flags & H2_READ_EOF) {
            stream->eof = 1;
            /* The body ends whole, and trailers carry the status. */
            if (!grpc_reader_idle(&stream->body) || !stream->trailers)
                abort();
        } else if (n == 0) {
            break; /* nothing now; nghttp2 would send an empty frame and wait */
        }
    }
    ended = stream->responded && (!stream->has_body || stream->eof);
    if (ended && stream->reset_after_end && !stream->client_ended)
        h2_stream_reset(stream, stream->reset_code);
    if (stream->reset) {
        stream_close(server, stream, stream->reset_code);
        return 1;
    }
    if (ended && stream->client_ended) {
        stream_close(server, stream, 0);
        return 1;
    }
    return 0;
}

void fake_h2_pump(struct h2_server *server)
{
    uint32_t last = server->next_id;

    /* By id, since a round may close streams and handlers may open none. */
    for (uint32_t id = 1; id <= last; id++) {
        struct h2_stream *stream = find(server, id);
        if (stream)
            pump_stream(server, stream);
    }
}
