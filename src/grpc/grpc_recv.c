/* grpc_recv: the h2 handler of every door.  It validates request headers,
 * authenticates the caller of methods that need one before any request
 * byte is accepted, reassembles and decodes request messages, enforces
 * grpc-timeout and the first message's timeout, holds delivery back while
 * a call's send queue is over its bound, and feeds the data provider. */
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc.h"
#include "grpc/grpc_connect.h"
#include "grpc/grpc_internal.h"
#include "h2/h2.h"

static void call_stream_end(void *data);

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    struct grpc_call *call = arg;

    grpc_call_fail(call, GRPC_STATUS_DEADLINE_EXCEEDED, "deadline exceeded");
    if (call->stream)
        call->transport->reset_after_end(call->stream, H2_CANCEL);
}

static void request_timeout(struct grpc_call *call)
{
    char message[96];

    call->request_waiting = 0;
    call->door->request_timeouts++;
    snprintf(message, sizeof(message), "the request message did not arrive within %u ms",
             (unsigned)call->server->limits.request_timeout_ms);
    grpc_call_fail(call, GRPC_STATUS_CANCELLED, message);
    if (call->stream)
        call->transport->reset_after_end(call->stream, H2_CANCEL);
}

/* Sweeps per request timeout: a request that started waiting between two
 * sweeps has waited at least the timeout (and less than 5/4 of it) when
 * REQUEST_SWEEPS + 1 sweeps have passed. */
#define REQUEST_SWEEPS 4

/* Every quarter of the request timeout: cancels the calls whose request has
 * waited for its first message longer than the timeout.  One sweep over
 * the calls, rather than a timer or a clock read per call, keeps the unary
 * path cheap. */
static void on_request_sweep(evutil_socket_t fd, short what, void *arg)
{
    struct grpc_server *server = arg;
    struct list_node *node, *next;

    server->sweeps++;
    list_for_each_safe (node, next, &server->calls) {
        struct grpc_call *call = list_entry(node, struct grpc_call, link);
        if (call->request_waiting && !call->finished &&
            server->sweeps - call->request_since_sweep > REQUEST_SWEEPS)
            request_timeout(call);
        else if (call->respond_at_end &&
                 server->sweeps - call->request_since_sweep > REQUEST_SWEEPS)
            grpc_connect_respond_held(call);
    }
}

struct event *grpc_request_sweep_new(struct grpc_server *server)
{
    uint32_t ms = server->limits.request_timeout_ms / REQUEST_SWEEPS;
    struct timeval tv;
    struct event *sweep;

    if (ms < 10)
        ms = 10;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    sweep = event_new(server->base, -1, EV_PERSIST, on_request_sweep, server);
    if (sweep && event_add(sweep, &tv) != 0) {
        event_free(sweep);
        sweep = NULL;
    }
    return sweep;
}

/* The request starts waiting for its first message, once per call. */
static void request_timer_start(struct grpc_call *call)
{
    if (call->request_timed)
        return;
    call->request_timed = 1;
    call->request_waiting = 1;
    call->request_since_sweep = call->server->sweeps;
}

static void request_timer_stop(struct grpc_call *call)
{
    call->request_waiting = 0;
}

void grpc_call_drop_input(struct grpc_call *call)
{
    request_timer_stop(call);
    byte_queue_clear(&call->in);
    call->end_pending = 0;
    if (!call->stream)
        return;
    call->transport->release(call->stream, SIZE_MAX);
    if (call->input_paused) {
        call->input_paused = 0;
        call->transport->pause_input(call->stream, 0);
    }
}

void *grpc_transport_call_open(struct grpc_door *door, const struct grpc_transport *transport,
                               void *stream)
{
    struct grpc_call *call = calloc(1, sizeof(*call));

    if (!call)
        return NULL;
    call->server = door->server;
    call->door = door;
    call->transport = transport;
    call->protocol = &grpc_protocol_grpc;
    call->stream = stream;
    grpc_reader_init(&call->reader, door->server->limits.max_recv_bytes);
    list_insert_head(&door->server->calls, &call->link);
    door->server->call_count++;
    return call;
}

static void *call_stream_open(void *listener_data, struct h2_stream *stream)
{
    return grpc_transport_call_open(listener_data, &grpc_transport_h2, stream);
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
        size_t n =
            value_len < sizeof(call->http_method) - 1 ? value_len : sizeof(call->http_method) - 1;
        memcpy(call->http_method, value, n);
        call->http_method[n] = '\0';
        call->is_post = value_len == 4 && memcmp(value, "POST", 4) == 0;
        return 0;
    }
    if (name_is(name, name_len, "te")) {
        call->te_trailers = value_len == 8 && memcmp(value, "trailers", 8) == 0;
        return 0;
    }
    if (name_is(name, name_len, "grpc-encoding")) {
        call->request_encoding = grpc_encoding_parse((const char *)value, value_len);
        call->encoding_unsupported = call->request_encoding == GRPC_ENCODING_UNSUPPORTED;
        return 0;
    }
    if (name_is(name, name_len, "grpc-accept-encoding")) {
        call->accept_encodings = grpc_accept_encoding_parse((const char *)value, value_len);
        return 0;
    }
    if (name_is(name, name_len, "grpc-timeout")) {
        call->has_timeout = 1;
        call->timeout_malformed =
            grpc_timeout_parse((const char *)value, value_len, &call->timeout_ns) != 0;
        return 0;
    }
    if (name_is(name, name_len, "connect-timeout-ms")) {
        call->has_timeout = 1;
        call->timeout_malformed =
            grpc_connect_timeout_parse((const char *)value, value_len, &call->timeout_ns) != 0;
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
    struct h2_header headers[8];
    char status_buf[12];
    size_t n = 3;

    snprintf(status_buf, sizeof(status_buf), "%d", grpc_status);
    headers[0] = (struct h2_header){":status", 7, http_status, strlen(http_status)};
    headers[1] = (struct h2_header){"grpc-status", 11, status_buf, strlen(status_buf)};
    headers[2] = (struct h2_header){"grpc-message", 12, message, strlen(message)};
    n += grpc_http_cors_headers(call, headers + n, 8 - n);
    call->finished = call->headers_sent = call->trailers_sent = 1;
    call->status = grpc_status;
    call->door->rejected_calls++;
    call->transport->respond(call->stream, headers, n, 0);
    if (!call->half_closed)
        call->transport->reset_after_end(call->stream, H2_NO_ERROR);
}

/* Resolves the caller from the request headers.  Returns 0, or -1 after
 * refusing the call (Trailers-Only, then RST_STREAM if the client is still
 * sending): nothing of its body is ever buffered. */
static int call_authenticate(struct grpc_call *call)
{
    const struct grpc_authenticator *auth = call->door->auth;
    const char *message = "this door accepts no caller";
    int status = GRPC_STATUS_UNAUTHENTICATED;

    if (auth) {
        call->caller = calloc(1, auth->caller_size ? auth->caller_size : 1);
        if (call->caller) {
            message = NULL;
            status = auth->authenticate(call, call->entry->method, call->caller, &message);
        } else {
            status = GRPC_STATUS_RESOURCE_EXHAUSTED;
            message = "out of memory";
        }
    }
    if (status == GRPC_STATUS_OK)
        return 0;
    free(call->caller);
    call->caller = NULL;
    if (status > 0 && status < GRPC_STATUS_COUNT)
        call->door->header_refusals[status]++;
    grpc_call_fail(call, status, message);
    return -1;
}

/* Requests may carry compressed messages once the client named their
 * encoding.  Responses are compressed with the client's own request
 * encoding when it accepts it back (or says nothing), else with gzip or
 * deflate when it lists one; a client that lists none gets identity. */
static void call_choose_encodings(struct grpc_call *call)
{
    unsigned accepted = call->accept_encodings;

    call->reader.allow_compressed = call->request_encoding != GRPC_ENCODING_IDENTITY;
    if (call->request_encoding != GRPC_ENCODING_IDENTITY &&
        (!accepted || (accepted & GRPC_ENCODING_BIT(call->request_encoding))))
        call->response_encoding = call->request_encoding;
    else if (accepted & GRPC_ENCODING_BIT(GRPC_ENCODING_GZIP))
        call->response_encoding = GRPC_ENCODING_GZIP;
    else if (accepted & GRPC_ENCODING_BIT(GRPC_ENCODING_DEFLATE))
        call->response_encoding = GRPC_ENCODING_DEFLATE;
}

static int method_is_unary_request(const struct grpc_method *method)
{
    return method->kind == GRPC_METHOD_UNARY || method->kind == GRPC_METHOD_SERVER_STREAMING;
}

static void call_stream_headers_done(void *data)
{
    struct grpc_call *call = data;
    const char *path = grpc_call_metadata(call, ":path");
    char message[256];

    const struct grpc_protocol *protocol =
        grpc_protocol_find(grpc_call_metadata(call, "content-type"));

    /* CORS preflights, and what the door's plain HTTP responder takes. */
    if (grpc_http_dispatch(call, protocol))
        return;
    if (!call->is_post) {
        call_reject_http(call, "405", GRPC_STATUS_UNIMPLEMENTED, "only POST is allowed");
        return;
    }
    if (!protocol) {
        call_reject_http(call, "415", GRPC_STATUS_UNKNOWN,
                         "content-type must be application/grpc, application/grpc-web or a "
                         "Connect type (application/proto, application/json, "
                         "application/connect+proto, application/connect+json)");
        return;
    }
    if (protocol->needs_http_trailers && !call->transport->carries_trailers) {
        call_reject_http(call, "415", GRPC_STATUS_UNKNOWN,
                         "application/grpc needs HTTP/2; over HTTP/1.1 use application/grpc-web");
        return;
    }
    if (protocol->needs_te_trailers && !call->te_trailers) {
        call_reject_http(call, "400", GRPC_STATUS_INTERNAL, "te: trailers is required");
        return;
    }
    call->protocol = protocol;
    call->entry = path ? grpc_door_find(call->door, path, strlen(path)) : NULL;
    if (!call->entry) {
        call->door->unknown_method_calls++;
        snprintf(message, sizeof(message), "unknown method %.200s", path ? path : "(none)");
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED, message);
        return;
    }
    call->entry->started++;
    call->door->protocol_calls[protocol->id][call->transport->index]++;
    if (protocol->connect && grpc_connect_check_request(call) != 0)
        return;
    if (protocol->unary_requests_only && !method_is_unary_request(call->entry->method)) {
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED,
                       "gRPC-Web carries unary and server-streaming methods only");
        return;
    }
    if (call->encoding_unsupported) {
        grpc_call_add_trailer(call, "grpc-accept-encoding",
                              (const uint8_t *)GRPC_ACCEPT_ENCODING_VALUE,
                              strlen(GRPC_ACCEPT_ENCODING_VALUE));
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "unsupported grpc-encoding");
        return;
    }
    /* Connect messages travel uncompressed (grpc_connect.h). */
    if (!protocol->connect)
        call_choose_encodings(call);
    if (call->timeout_malformed) {
        grpc_call_fail(
            call, protocol->connect ? GRPC_STATUS_INVALID_ARGUMENT : GRPC_STATUS_INTERNAL,
            protocol->connect ? "malformed connect-timeout-ms" : "malformed grpc-timeout");
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
    if (call->entry->method->needs_caller && call_authenticate(call) != 0)
        return;
    call->started = 1;
    /* A unary request is due at once; a stream's first message is timed
     * from its first byte, so an open stream may stay quiet. */
    if (method_is_unary_request(call->entry->method))
        request_timer_start(call);
    if (call->entry->method->on_start)
        call->entry->method->on_start(call);
}

/* Inflates a compressed request message into *OUT (freed by the caller).
 * Returns 0, or -1 after ending the call: RESOURCE_EXHAUSTED when it would
 * inflate past the receive limit (nothing past the limit is ever
 * produced), INTERNAL when it is not a valid stream of its encoding. */
static int call_inflate(struct grpc_call *call, const uint8_t *bytes, size_t len, uint8_t **out,
                        size_t *out_len)
{
    enum grpc_encoding encoding = (enum grpc_encoding)call->request_encoding;
    size_t limit = call->server->limits.max_recv_bytes;
    char message[160];
    enum grpc_inflate_result rv = grpc_inflate(encoding, bytes, len, limit, out, out_len);

    if (rv == GRPC_INFLATE_OK) {
        call->door->compressed_received[encoding]++;
        return 0;
    }
    call->door->decompress_refusals++;
    if (rv == GRPC_INFLATE_TOO_LARGE) {
        snprintf(message, sizeof(message),
                 "request message larger than the limit (%zu bytes) once decompressed", limit);
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
    } else if (rv == GRPC_INFLATE_NO_MEMORY) {
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        snprintf(message, sizeof(message), "cannot decompress the request message (%s)",
                 grpc_encoding_name(encoding));
        grpc_call_fail(call, GRPC_STATUS_INTERNAL, message);
    }
    return -1;
}

static void call_deliver(struct grpc_call *call, const uint8_t *bytes, size_t len, int compressed)
{
    const struct grpc_method *method = call->entry->method;
    ProtobufCMessage *request;
    uint8_t *inflated = NULL;
    char why[256];

    if (compressed) {
        if (call_inflate(call, bytes, len, &inflated, &len) != 0)
            return;
        bytes = inflated ? inflated : (const uint8_t *)"";
    }
    /* A JSON message becomes protobuf binary first, so the request check and
     * the handler see what a protobuf client would have sent. */
    if (call->protocol->json) {
        if (grpc_connect_json_request(call, bytes, len, &inflated, &len) != 0)
            return;
        bytes = inflated;
    }
    if (call->server->request_check &&
        call->server->request_check(method->request_type, bytes, len, why, sizeof(why)) != 0) {
        grpc_call_fail(call, GRPC_STATUS_INVALID_ARGUMENT, why);
        free(inflated);
        return;
    }
    request = protobuf_c_message_unpack(method->request_type, NULL, len, bytes);
    free(inflated);
    if (!request) {
        grpc_call_fail(call, GRPC_STATUS_INTERNAL, "cannot parse the request message");
        return;
    }
    method->on_message(call, request);
    protobuf_c_message_free_unpacked(request, NULL);
}

static void on_resume(evutil_socket_t fd, short what, void *arg);

/* The send queue is over its bound: no request message reaches the handler
 * until it drains, and h2 withholds window so the client stops sending. */
static void call_pause_input(struct grpc_call *call)
{
    if (!call->resume)
        call->resume = event_new(call->server->base, -1, 0, on_resume, call);
    if (!call->resume) {
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    call->input_paused = 1;
    call->door->recv_pauses++;
    call->transport->pause_input(call->stream, 1);
}

/* Feeds request bytes to the reader and hands whole messages over.
 * Returns how many of LEN it used: all unless delivery paused part way (a
 * finished call's bytes count as used: they are thrown away). */
static size_t call_feed(struct grpc_call *call, const uint8_t *bytes, size_t len)
{
    size_t used = 0;

    while (used < len && !call->finished && !call->input_paused) {
        size_t consumed, message_len;
        enum grpc_reader_result rv =
            grpc_reader_feed(&call->reader, bytes + used, len - used, &consumed);
        used += consumed;
        if (rv == GRPC_READER_NEED_MORE)
            break;
        if (rv == GRPC_READER_TOO_LARGE) {
            char message[128];
            snprintf(message, sizeof(message), "request message larger than the limit (%zu bytes)",
                     call->server->limits.max_recv_bytes);
            grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
            break;
        }
        if (rv == GRPC_READER_COMPRESSED) {
            grpc_call_fail(call, GRPC_STATUS_INTERNAL,
                           "compressed message without a supported grpc-encoding");
            break;
        }
        if (rv < 0) {
            grpc_call_fail(call, GRPC_STATUS_INTERNAL, "malformed message framing");
            break;
        }
        call->message_count++;
        if (method_is_unary_request(call->entry->method)) {
            if (call->message_count > 1) {
                grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED,
                               "more than one request message for a unary request");
                break;
            }
            grpc_reader_message(&call->reader, &message_len);
            /* Keep the one request until the client half-closes. */
            call->unary_request = call->reader.body;
            call->unary_request_len = message_len;
            call->unary_compressed = call->reader.compressed != 0;
            call->reader.body = NULL;
            grpc_reader_take(&call->reader);
            continue;
        }
        request_timer_stop(call);
        const uint8_t *message = grpc_reader_message(&call->reader, &message_len);
        call_deliver(call, message, message_len, call->reader.compressed);
        grpc_reader_take(&call->reader);
        if (call->finished || !call->stream)
            break;
        call->transport->release(call->stream, GRPC_FRAME_HEADER_LEN + message_len);
        if (grpc_call_over_bound(call))
            call_pause_input(call);
    }
    return call->finished ? len : used;
}

/* Keeps request bytes that cannot be delivered yet. */
static void call_queue_input(struct grpc_call *call, const uint8_t *bytes, size_t len)
{
    uint8_t *at = byte_queue_reserve(&call->in, len);

    if (!at) {
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    memcpy(at, bytes, len);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct grpc_call *call = arg;
    size_t used;

    if (!call->input_paused || call->finished || !call->stream || grpc_call_over_bound(call))
        return;
    call->input_paused = 0;
    used = call_feed(call, call->in.data + call->in.start, byte_queue_length(&call->in));
    if (call->finished)
        return; /* grpc_call_drop_input emptied the queue */
    byte_queue_consume(&call->in, used);
    if (call->input_paused)
        return;
    call->transport->pause_input(call->stream, 0);
    if (call->end_pending) {
        call->end_pending = 0;
        call_stream_end(call);
    }
}

static void call_stream_data(void *data, const uint8_t *bytes, size_t len)
{
    struct grpc_call *call = data;
    size_t used;

    if (call->finished || !call->started) {
        call->transport->release(call->stream, len);
        call->dropped_at_end += len;
        if (call->respond_at_end && call->dropped_at_end > call->server->limits.max_recv_bytes)
            grpc_connect_respond_held(call);
        return;
    }
    if (call->message_count == 0)
        request_timer_start(call);
    if (call->protocol->bare_body) {
        grpc_connect_body_data(call, bytes, len);
        return;
    }
    if (call->protocol->base64) {
        /* The request is one message (unary_requests_only), so the
         * transport's bytes stay held until it is whole: no release here. */
        int rv;
        byte_queue_clear(&call->text_scratch);
        rv = grpc_base64_decoder_feed(&call->text_in, bytes, len, &call->text_scratch);
        if (rv != 0) {
            grpc_call_fail(call, rv == -2 ? GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_INTERNAL,
                           rv == -2 ? "out of memory" : "the grpc-web-text request is not base64");
            return;
        }
        bytes = call->text_scratch.data + call->text_scratch.start;
        len = byte_queue_length(&call->text_scratch);
    }
    if (call->input_paused || byte_queue_length(&call->in) > 0) {
        call_queue_input(call, bytes, len);
        return;
    }
    used = call_feed(call, bytes, len);
    if (used < len)
        call_queue_input(call, bytes + used, len - used);
}

static void call_stream_end(void *data)
{
    struct grpc_call *call = data;

    call->half_closed = 1;
    if (call->respond_at_end)
        grpc_connect_respond_held(call);
    if (call->finished || !call->started)
        return;
    if (call->input_paused || byte_queue_length(&call->in) > 0) {
        call->end_pending = 1; /* after the held messages */
        return;
    }
    if (call->protocol->base64 && !grpc_base64_decoder_done(&call->text_in)) {
        grpc_call_fail(call, GRPC_STATUS_INTERNAL,
                       "the grpc-web-text request ended inside a base64 group");
        return;
    }
    if (call->protocol->bare_body && grpc_connect_body_end(call) != 0)
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
        request_timer_stop(call);
        call_deliver(call, call->unary_request ? call->unary_request : (const uint8_t *)"",
                     call->unary_request_len, call->unary_compressed);
        free(call->unary_request);
        call->unary_request = NULL;
        if (call->stream) /* the whole request is delivered */
            call->transport->release(call->stream, SIZE_MAX);
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

/* Copies queued response bytes into BUF (up to LEN).  Returns the count, or
 * H2_READ_DEFERRED when nothing is queued yet; at the end of the body sets
 * H2_READ_EOF (trailers follow, sent from here) or, when the protocol put
 * them in the body, H2_READ_EOF_END_STREAM. */
static ssize_t call_read_body(struct grpc_call *call, uint8_t *buf, size_t len, uint32_t *flags)
{
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
    /* Delivery resumes from the loop, not from inside nghttp2's send. */
    if (call->input_paused && !grpc_call_over_bound(call))
        event_active(call->resume, EV_WRITE, 0);
    if (byte_queue_length(&call->out) == 0 && call->finished) {
        if (call->protocol->trailers_in_body) {
            *flags |= H2_READ_EOF_END_STREAM;
        } else if (!call->trailers_sent) {
            *flags |= H2_READ_EOF;
            grpc_call_send_trailers(call);
        }
    }
    return (ssize_t)len;
}

/* Raw bytes taken per read in text mode. */
#define TEXT_RAW_CHUNK (12 * 1024)

/* The body as base64 text: raw bytes are encoded into text_pending and
 * handed out from there in whatever sizes the transport asks for.  A
 * partial group is carried to the next read only while more raw bytes are
 * queued; once the queue is drained it is padded, so a streaming client
 * decodes every message as soon as it is sent, not when the next one comes
 * (decoders read four characters at a time, and padding between groups is
 * what gRPC-Web's own clients accept).  Returns as call_read_body. */
static ssize_t call_read_text(struct grpc_call *call, uint8_t *buf, size_t len, uint32_t *flags)
{
    size_t pending = byte_queue_length(&call->text_pending);

    if (pending == 0 && !call->text_eof) {
        uint8_t raw[TEXT_RAW_CHUNK];
        uint32_t raw_flags = 0;
        ssize_t n = call_read_body(call, raw, sizeof(raw), &raw_flags);
        uint8_t *at;
        if (n < 0)
            return n;
        at = byte_queue_reserve(&call->text_pending, ((size_t)n + 2) / 3 * 4 + 8);
        if (!at)
            return H2_READ_ERROR;
        call->text_eof = (raw_flags & H2_READ_EOF_END_STREAM) != 0;
        int drained = call->text_eof || byte_queue_length(&call->out) == 0;
        size_t written = grpc_base64_encoder_feed(&call->text_out, raw, (size_t)n, drained, at);
        call->text_pending.end = (size_t)(at - call->text_pending.data) + written;
        pending = written;
        if (pending == 0 && !call->text_eof) {
            /* One or two bytes wait in the carry for the next message. */
            byte_queue_clear(&call->text_pending);
            call->deferred = 1;
            return H2_READ_DEFERRED;
        }
    }
    if (len > pending)
        len = pending;
    if (len > 0) {
        memcpy(buf, call->text_pending.data + call->text_pending.start, len);
        byte_queue_consume(&call->text_pending, len);
    }
    if (call->text_eof && byte_queue_length(&call->text_pending) == 0)
        *flags |= H2_READ_EOF_END_STREAM;
    return (ssize_t)len;
}

/* A plain HTTP answer's body, as it is. */
static ssize_t call_read_plain(struct grpc_call *call, uint8_t *buf, size_t len, uint32_t *flags)
{
    size_t available = byte_queue_length(&call->out);

    if (len > available)
        len = available;
    if (len > 0) {
        memcpy(buf, call->out.data + call->out.start, len);
        byte_queue_consume(&call->out, len);
    }
    if (byte_queue_length(&call->out) == 0)
        *flags |= H2_READ_EOF_END_STREAM;
    return (ssize_t)len;
}

static ssize_t call_stream_read(void *data, uint8_t *buf, size_t len, uint32_t *flags)
{
    struct grpc_call *call = data;

    if (call->plain)
        return call_read_plain(call, buf, len, flags);
    if (call->protocol->base64)
        return call_read_text(call, buf, len, flags);
    return call_read_body(call, buf, len, flags);
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
    list_remove(&call->link);
    server->call_count--;
    if (call->resume)
        event_free(call->resume);
    grpc_reader_free(&call->reader);
    free(call->unary_request);
    free(call->status_message);
    free(call->caller);
    byte_queue_free(&call->in);
    byte_queue_free(&call->out);
    byte_queue_free(&call->text_scratch);
    byte_queue_free(&call->text_pending);
    byte_queue_free(&call->bare_in);
    grpc_header_list_free(&call->request_headers);
    grpc_header_list_free(&call->initial_metadata);
    grpc_header_list_free(&call->trailing_metadata);
    free(call);
}

const struct h2_handler grpc_h2_handler = {
    .stream_open = call_stream_open,
    .stream_header = call_stream_header,
    .stream_headers_done = call_stream_headers_done,
    .stream_data = call_stream_data,
    .stream_end = call_stream_end,
    .stream_read = call_stream_read,
    .stream_close = call_stream_close,
};
