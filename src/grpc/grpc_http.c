/* grpc_http: what a door answers to browsers beyond gRPC calls: CORS
 * preflights and headers for the origins it allows, and plain HTTP answers
 * from the responder its owner installed (grpc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grpc/grpc_internal.h"

/* What a preflight allows: the methods gRPC-Web and plain pages use, and
 * the request headers gRPC-Web clients send. */
#define CORS_ALLOW_METHODS "POST, GET, OPTIONS"
#define CORS_ALLOW_HEADERS                                                                         \
    "authorization, content-type, x-grpc-web, x-user-agent, grpc-timeout, grpc-encoding, "         \
    "grpc-accept-encoding"
/* What a page may read of a response. */
#define CORS_EXPOSE_HEADERS "grpc-status, grpc-message, agenthub-last-seq, grpc-encoding"
#define CORS_MAX_AGE        "7200"

/* 1 when ORIGIN is "scheme://host[:port]": http or https, no path, no
 * whitespace. */
static int origin_well_formed(const char *origin)
{
    const char *host;

    if (strncmp(origin, "https://", 8) == 0)
        host = origin + 8;
    else if (strncmp(origin, "http://", 7) == 0)
        host = origin + 7;
    else
        return 0;
    if (!*host || strlen(origin) > 255)
        return 0;
    for (const char *p = host; *p; p++)
        if (*p == '/' || *p == ' ' || *p == '\t' || *p == '?' || *p == '#' ||
            (unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return 0;
    return 1;
}

int grpc_cors_origin_valid(const char *origin)
{
    return origin_well_formed(origin);
}

int grpc_door_add_cors_origin(struct grpc_door *door, const char *origin)
{
    char **origins;

    if (!origin_well_formed(origin))
        return -1;
    origins = realloc(door->cors_origins, (door->cors_origin_count + 1) * sizeof(*origins));
    if (!origins)
        return -1;
    door->cors_origins = origins;
    origins[door->cors_origin_count] = strdup(origin);
    if (!origins[door->cors_origin_count])
        return -1;
    door->cors_origin_count++;
    return 0;
}

void grpc_door_set_http_responder(struct grpc_door *door, grpc_http_responder responder, void *arg)
{
    door->responder = responder;
    door->responder_arg = arg;
}

void grpc_http_door_free(struct grpc_door *door)
{
    for (size_t i = 0; i < door->cors_origin_count; i++)
        free(door->cors_origins[i]);
    free(door->cors_origins);
}

/* The request's Origin when the door allows it, else NULL.  Origins
 * compare exactly, as browsers send them (scheme and host lowercase). */
static const char *allowed_origin(const struct grpc_call *call)
{
    const char *origin = grpc_call_metadata(call, "origin");

    if (!origin)
        return NULL;
    for (size_t i = 0; i < call->door->cors_origin_count; i++)
        if (strcasecmp(call->door->cors_origins[i], origin) == 0)
            return origin;
    return NULL;
}

size_t grpc_http_cors_headers(const struct grpc_call *call, struct h2_header *out, size_t max)
{
    const char *origin = allowed_origin(call);
    size_t n = 0;

    if (!origin || max < 3)
        return 0;
    out[n++] = (struct h2_header){"access-control-allow-origin", 27, origin, strlen(origin)};
    out[n++] = (struct h2_header){"access-control-expose-headers", 29, CORS_EXPOSE_HEADERS,
                                  strlen(CORS_EXPOSE_HEADERS)};
    out[n++] = (struct h2_header){"vary", 4, "Origin", 6};
    return n;
}

/* Sends a finished plain answer: STATUS, HEADERS, then BODY from call->out
 * (the read path hands it out raw and ends the stream). */
static void respond_plain(struct grpc_call *call, int status, const struct h2_header *extra,
                          size_t extra_count, const uint8_t *body, size_t body_len)
{
    struct h2_header headers[40];
    char status_buf[12], length_buf[24];
    size_t n = 0;
    int head_only = strcmp(call->http_method, "HEAD") == 0;

    snprintf(status_buf, sizeof(status_buf), "%d", status);
    snprintf(length_buf, sizeof(length_buf), "%zu", body_len);
    headers[n++] = (struct h2_header){":status", 7, status_buf, strlen(status_buf)};
    for (size_t i = 0; i < extra_count && n < 32; i++)
        headers[n++] = extra[i];
    /* 204 and 304 have no body and say no length. */
    if (status != 204 && status != 304)
        headers[n++] = (struct h2_header){"content-length", 14, length_buf, strlen(length_buf)};
    n += grpc_http_cors_headers(call, headers + n, 40 - n);
    call->plain = 1;
    call->finished = call->headers_sent = call->trailers_sent = 1;
    if (body_len > 0 && !head_only) {
        uint8_t *at = byte_queue_reserve(&call->out, body_len);
        if (!at) {
            call->transport->reset_after_end(call->stream, H2_INTERNAL_ERROR);
            body_len = 0;
        } else {
            memcpy(at, body, body_len);
        }
    }
    call->transport->respond(call->stream, headers, n, body_len > 0 && !head_only);
    /* The request's body, if any, is not wanted. */
    if (!call->half_closed)
        call->transport->reset_after_end(call->stream, H2_NO_ERROR);
}

/* A CORS preflight: allowed origins get what they may send, others 403
 * without any CORS header (the browser then refuses the call itself). */
static void answer_preflight(struct grpc_call *call)
{
    const char *origin = allowed_origin(call);
    struct h2_header headers[6];
    size_t n = 0;

    call->door->cors_preflights[origin != NULL]++;
    if (!origin) {
        static const char refusal[] = "origin not allowed\n";
        headers[n++] = (struct h2_header){"content-type", 12, "text/plain", 10};
        respond_plain(call, 403, headers, n, (const uint8_t *)refusal, sizeof(refusal) - 1);
        return;
    }
    headers[n++] = (struct h2_header){"access-control-allow-methods", 28, CORS_ALLOW_METHODS,
                                      strlen(CORS_ALLOW_METHODS)};
    headers[n++] = (struct h2_header){"access-control-allow-headers", 28, CORS_ALLOW_HEADERS,
                                      strlen(CORS_ALLOW_HEADERS)};
    headers[n++] =
        (struct h2_header){"access-control-max-age", 22, CORS_MAX_AGE, strlen(CORS_MAX_AGE)};
    /* respond_plain adds allow-origin, expose-headers and vary. */
    respond_plain(call, 204, headers, n, NULL, 0);
}

int grpc_http_dispatch(struct grpc_call *call, const struct grpc_protocol *protocol)
{
    struct grpc_http_response answer;
    struct h2_header headers[24];
    size_t n = 0;
    const char *path;

    if (strcmp(call->http_method, "OPTIONS") == 0) {
        answer_preflight(call);
        return 1;
    }
    if ((call->is_post && protocol) || !call->door->responder)
        return 0;
    path = grpc_call_metadata(call, ":path");
    memset(&answer, 0, sizeof(answer));
    if (!call->door->responder(call->door->responder_arg, call, call->http_method,
                               path ? path : "/", &answer))
        return 0;
    call->door->plain_answers++;
    for (size_t i = 0; i < answer.header_count && n < 24; i++)
        headers[n++] = (struct h2_header){answer.headers[i].name, strlen(answer.headers[i].name),
                                          answer.headers[i].value, strlen(answer.headers[i].value)};
    respond_plain(call, answer.status, headers, n, answer.body, answer.body_len);
    return 1;
}
