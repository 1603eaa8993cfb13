/* grpc_connect: the Connect protocol's responses, errors, timeouts and JSON
 * messages (grpc_connect.h). */
#include "grpc/grpc_connect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/utf8.h"
#include "grpc/grpc_internal.h"
#include "grpc/grpc_json.h"

static const char *const code_names[GRPC_STATUS_COUNT] = {
    "ok",
    "canceled",
    "unknown",
    "invalid_argument",
    "deadline_exceeded",
    "not_found",
    "already_exists",
    "permission_denied",
    "resource_exhausted",
    "failed_precondition",
    "aborted",
    "out_of_range",
    "unimplemented",
    "internal",
    "unavailable",
    "data_loss",
    "unauthenticated",
};

/* The Connect protocol's HTTP status for each code. */
static const int http_statuses[GRPC_STATUS_COUNT] = {
    200, 499, 500, 400, 504, 404, 409, 403, 429, 400, 409, 400, 501, 500, 503, 500, 401,
};

const char *grpc_connect_code_name(int status)
{
    if (status < 0 || status >= GRPC_STATUS_COUNT)
        return "unknown";
    return code_names[status];
}

int grpc_connect_http_status(int status)
{
    if (status < 0 || status >= GRPC_STATUS_COUNT)
        return 500;
    return http_statuses[status];
}

int grpc_connect_timeout_parse(const char *value, size_t len, uint64_t *nanoseconds)
{
    uint64_t ms = 0;

    if (len == 0 || len > 10)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (value[i] < '0' || value[i] > '9')
            return -1;
        ms = ms * 10 + (uint64_t)(value[i] - '0');
    }
    *nanoseconds = ms * 1000000u;
    return 0;
}

int grpc_connect_check_request(struct grpc_call *call)
{
    const struct grpc_method *method = call->entry->method;
    const char *version = grpc_call_metadata(call, "connect-protocol-version");
    const char *encoding = grpc_call_metadata(
        call, call->protocol->bare_body ? "content-encoding" : "connect-content-encoding");

    if (version && strcmp(version, "1") != 0) {
        grpc_call_fail(call, GRPC_STATUS_INVALID_ARGUMENT, "connect-protocol-version must be 1");
        return -1;
    }
    if (encoding && strcasecmp(encoding, "identity") != 0) {
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED,
                       "unsupported content encoding: this server takes identity only");
        return -1;
    }
    if (call->protocol->bare_body && method->kind != GRPC_METHOD_UNARY) {
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED,
                       "a streaming method takes application/connect+proto or "
                       "application/connect+json");
        return -1;
    }
    /* A bidi stream needs both directions open at once, which only HTTP/2
     * (the transport with trailers) gives. */
    if (method->kind == GRPC_METHOD_BIDI_STREAMING && !call->transport->carries_trailers) {
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "bidi streams need HTTP/2");
        return -1;
    }
    if (!method->response_type) {
        grpc_call_fail(call, GRPC_STATUS_UNIMPLEMENTED, "this method has no Connect mapping");
        return -1;
    }
    return 0;
}

int grpc_connect_json_request(struct grpc_call *call, const uint8_t *bytes, size_t len,
                              uint8_t **out, size_t *out_len)
{
    char why[GRPC_JSON_ERR_SIZE];
    ProtobufCMessage *m = grpc_json_decode(call->entry->method->request_type, (const char *)bytes,
                                           len, why, sizeof(why));

    if (!m) {
        grpc_call_fail(call, GRPC_STATUS_INVALID_ARGUMENT, why);
        return -1;
    }
    *out_len = protobuf_c_message_get_packed_size(m);
    *out = malloc(*out_len + 1);
    if (!*out) {
        protobuf_c_message_free_unpacked(m, NULL);
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return -1;
    }
    protobuf_c_message_pack(m, *out);
    protobuf_c_message_free_unpacked(m, NULL);
    return 0;
}

char *grpc_connect_json_message(struct grpc_call *call, const ProtobufCMessage *message,
                                size_t *len)
{
    char why[GRPC_JSON_ERR_SIZE];
    char *json = grpc_json_encode(message, len, why, sizeof(why));

    if (!json)
        grpc_call_fail(call, GRPC_STATUS_INTERNAL, why);
    return json;
}

char *grpc_connect_json_encoded(struct grpc_call *call, const uint8_t *prefix, size_t prefix_len,
                                const uint8_t *body, size_t body_len, size_t *len)
{
    const ProtobufCMessageDescriptor *type = call->entry->method->response_type;
    uint8_t *whole = malloc(prefix_len + body_len + 1);
    ProtobufCMessage *m = NULL;
    char *json = NULL;

    if (whole) {
        if (prefix_len)
            memcpy(whole, prefix, prefix_len);
        if (body_len)
            memcpy(whole + prefix_len, body, body_len);
        m = protobuf_c_message_unpack(type, NULL, prefix_len + body_len, whole);
        free(whole);
    }
    if (!m) {
        grpc_call_fail(call, GRPC_STATUS_INTERNAL, "cannot re-read a response message as JSON");
        return NULL;
    }
    json = grpc_connect_json_message(call, m, len);
    protobuf_c_message_free_unpacked(m, NULL);
    return json;
}

/* --- JSON text ----------------------------------------------------------- */

/* A growing text; FAILED once memory ran short. */
struct text {
    char *p;
    size_t len, cap;
    int failed;
};

static void text_add(struct text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        char *p;
        while (cap < t->len + n + 1)
            cap *= 2;
        p = realloc(t->p, cap);
        if (!p) {
            t->failed = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void text_str(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* S as a JSON string.  Bytes that are not UTF-8 (a handler's message may
 * quote client input) become U+FFFD, so the document stays valid. */
static void text_json_string(struct text *t, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = strlen(s);

    text_add(t, "\"", 1);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        size_t n;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            text_add(t, esc, 2);
            i++;
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            text_add(t, esc, 6);
            i++;
        } else if (c < 0x80) {
            text_add(t, s + i, 1);
            i++;
        } else if ((n = utf8_decode((const uint8_t *)s + i, len - i, &cp)) > 0) {
            text_add(t, s + i, n);
            i += n;
        } else {
            text_add(t, "\xef\xbf\xbd", 3);
            i++;
        }
    }
    text_add(t, "\"", 1);
}

/* {"code": ..., "message": ...} for the call's status. */
static void text_error(struct text *t, const struct grpc_call *call)
{
    text_str(t, "{\"code\":\"");
    text_str(t, grpc_connect_code_name(call->status));
    text_str(t, "\"");
    if (call->status_message && call->status_message[0]) {
        text_str(t, ",\"message\":");
        text_json_string(t, call->status_message);
    }
    text_str(t, "}");
}

/* The trailing metadata as {"name": ["value", ...], ...}, one key per name
 * in the order names first appear. */
static void text_metadata(struct text *t, const struct header_list *list)
{
    size_t offset = 0, start = 0, keys = 0;
    const char *name, *value, *n2, *v2;

    text_str(t, "{");
    while (start = offset, grpc_header_list_next(list, &offset, &name, &value)) {
        size_t scan = 0, values = 0;
        int written = 0;
        while (scan < start && grpc_header_list_next(list, &scan, &n2, &v2))
            if (strcmp(n2, name) == 0)
                written = 1;
        if (written)
            continue;
        text_str(t, keys++ ? "," : "");
        text_json_string(t, name);
        text_str(t, ":[");
        scan = start;
        while (grpc_header_list_next(list, &scan, &n2, &v2)) {
            if (strcmp(n2, name) != 0)
                continue;
            text_str(t, values++ ? "," : "");
            text_json_string(t, v2);
        }
        text_str(t, "]");
    }
    text_str(t, "}");
}

/* --- Finishing ----------------------------------------------------------- */

/* The unary response: the one message bare, or the error JSON. */
static int finish_unary(struct grpc_call *call)
{
    struct h2_header headers[48];
    struct header_list trailer_names = {0};
    struct text body = {0};
    char http_status[8];
    size_t n = 0, offset = 0;
    const char *name, *value;
    int ok = call->status == GRPC_STATUS_OK;
    int rv = -1;

    if (ok) {
        /* The handler's message went into the queue enveloped; the
         * response carries it bare. */
        if (byte_queue_length(&call->out) >= GRPC_FRAME_HEADER_LEN)
            byte_queue_consume(&call->out, GRPC_FRAME_HEADER_LEN);
    } else {
        call->out.end = call->out.start;
        text_error(&body, call);
        if (body.failed)
            goto out;
        uint8_t *at = byte_queue_reserve(&call->out, body.len);
        if (!at)
            goto out;
        memcpy(at, body.p, body.len);
    }
    /* Consumption tracks one part the size of the whole body, so it never
     * reads an envelope header out of a bare body. */
    call->out_partial = byte_queue_length(&call->out);
    snprintf(http_status, sizeof(http_status), "%d", grpc_connect_http_status(call->status));
    headers[n++] = (struct h2_header){":status", 7, http_status, strlen(http_status)};
    if (ok) {
        const char *type = call->protocol->response_content_type;
        headers[n++] = (struct h2_header){"content-type", 12, type, strlen(type)};
    } else {
        headers[n++] = (struct h2_header){"content-type", 12, "application/json", 16};
    }
    while (n < 24 && grpc_header_list_next(&call->initial_metadata, &offset, &name, &value))
        headers[n++] = (struct h2_header){name, strlen(name), value, strlen(value)};
    offset = 0;
    while (grpc_header_list_next(&call->trailing_metadata, &offset, &name, &value)) {
        char prefixed[128];
        int len = snprintf(prefixed, sizeof(prefixed), "trailer-%s", name);
        if (len < 0 || (size_t)len >= sizeof(prefixed))
            continue;
        if (grpc_header_list_add(&trailer_names, prefixed, (size_t)len, value, strlen(value)) != 0)
            goto out;
    }
    offset = 0;
    while (n < 48 && grpc_header_list_next(&trailer_names, &offset, &name, &value))
        headers[n++] = (struct h2_header){name, strlen(name), value, strlen(value)};
    call->headers_sent = 1;
    call->trailers_sent = 1;
    grpc_call_count_status(call, call->status);
    rv = call->transport->respond(call->stream, headers, n, byte_queue_length(&call->out) > 0);
out:
    grpc_header_list_free(&trailer_names);
    free(body.p);
    return rv;
}

/* The end-of-stream message: the error, if any, and the trailing metadata. */
static int finish_stream(struct grpc_call *call)
{
    struct text t = {0};
    uint8_t *at;
    int rv = -1;

    text_str(&t, "{");
    if (call->status != GRPC_STATUS_OK) {
        text_str(&t, "\"error\":");
        text_error(&t, call);
    }
    if (call->trailing_metadata.count > 0) {
        text_str(&t, call->status != GRPC_STATUS_OK ? ",\"metadata\":" : "\"metadata\":");
        text_metadata(&t, &call->trailing_metadata);
    }
    text_str(&t, "}");
    call->trailers_sent = 1;
    grpc_call_count_status(call, call->status);
    if (!t.failed && (at = grpc_frame_reserve(&call->out, t.len)) != NULL) {
        memcpy(at, t.p, t.len);
        at[-GRPC_FRAME_HEADER_LEN] = GRPC_CONNECT_END_STREAM;
        rv = 0;
    }
    free(t.p);
    return rv;
}

int grpc_connect_finish(struct grpc_call *call)
{
    return call->protocol->bare_body ? finish_unary(call) : finish_stream(call);
}

void grpc_connect_respond_held(struct grpc_call *call)
{
    if (!call->respond_at_end)
        return;
    call->respond_at_end = 0;
    if (call->stream && grpc_connect_finish(call) != 0)
        call->transport->reset_after_end(call->stream, H2_INTERNAL_ERROR);
}

void grpc_connect_body_data(struct grpc_call *call, const uint8_t *bytes, size_t len)
{
    size_t limit = call->server->limits.max_recv_bytes;
    uint8_t *at;

    if (len == 0)
        return;
    if (len > limit - byte_queue_length(&call->bare_in)) {
        char message[128];
        snprintf(message, sizeof(message), "request message larger than the limit (%zu bytes)",
                 limit);
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, message);
        return;
    }
    at = byte_queue_reserve(&call->bare_in, len);
    if (!at) {
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    memcpy(at, bytes, len);
}

int grpc_connect_body_end(struct grpc_call *call)
{
    size_t n = byte_queue_length(&call->bare_in);

    call->unary_request = malloc(n + 1);
    if (!call->unary_request) {
        grpc_call_fail(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return -1;
    }
    if (n)
        memcpy(call->unary_request, call->bare_in.data + call->bare_in.start, n);
    call->unary_request_len = n;
    call->message_count = 1;
    byte_queue_free(&call->bare_in);
    return 0;
}
