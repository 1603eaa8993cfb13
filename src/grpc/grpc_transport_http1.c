/* grpc_transport_http1: the gRPC call transport on http1's requests, and
 * the http1 handler that feeds them to the call layer.  HTTP/1.1 carries no
 * trailers a browser can read, so only protocols that put the status in the
 * body (gRPC-Web) are served on it; the call layer refuses native gRPC. */
#include <string.h>

#include "grpc/grpc_internal.h"
#include "grpc/grpc_transport.h"
#include "h2/h2.h"
#include "http1/http1.h"

/* Response headers one call sends at most (status, content type, encodings,
 * CORS, initial metadata). */
#define H1T_MAX_HEADERS 48

_Static_assert(HTTP1_READ_DEFERRED == H2_READ_DEFERRED && HTTP1_READ_ERROR == H2_READ_ERROR,
               "http1 and h2 read results differ");

static int h1t_respond(void *stream, const struct h2_header *headers, size_t count, int has_body)
{
    struct http1_header out[H1T_MAX_HEADERS];

    if (count > H1T_MAX_HEADERS)
        count = H1T_MAX_HEADERS;
    for (size_t i = 0; i < count; i++)
        out[i] = (struct http1_header){headers[i].name, headers[i].name_len, headers[i].value,
                                       headers[i].value_len};
    return http1_request_respond(stream, out, count, has_body);
}

static int h1t_trailers(void *stream, const struct h2_header *headers, size_t count)
{
    return -1;
}

static void h1t_resume(void *stream)
{
    http1_request_resume(stream);
}

/* HTTP/1.1 has no stream to reset: http1 reads and drops whatever is left
 * of the request body after the response (bounded), and the connection
 * goes on. */
static void h1t_reset_after_end(void *stream, uint32_t error_code)
{
}

/* evhttp holds a request's whole body (bounded) before the call sees it:
 * there is no window to give back or withhold. */
static void h1t_release(void *stream, size_t len)
{
}

static void h1t_pause_input(void *stream, int paused)
{
}

static size_t h1t_backlog(const void *stream)
{
    return http1_request_backlog(stream);
}

const struct grpc_transport grpc_transport_http1 = {
    .name = "http1",
    .index = 1,
    .carries_trailers = 0,
    .respond = h1t_respond,
    .trailers = h1t_trailers,
    .resume = h1t_resume,
    .reset_after_end = h1t_reset_after_end,
    .release = h1t_release,
    .pause_input = h1t_pause_input,
    .backlog = h1t_backlog,
};

static void *h1_open(void *door, struct http1_request *request)
{
    return grpc_transport_call_open(door, &grpc_transport_http1, request);
}

static int h1_header(void *call, const uint8_t *name, size_t name_len, const uint8_t *value,
                     size_t value_len)
{
    return grpc_h2_handler.stream_header(call, name, name_len, value, value_len);
}

static void h1_headers_done(void *call)
{
    grpc_h2_handler.stream_headers_done(call);
}

static void h1_data(void *call, const uint8_t *bytes, size_t len)
{
    grpc_h2_handler.stream_data(call, bytes, len);
}

static void h1_end(void *call)
{
    grpc_h2_handler.stream_end(call);
}

static ssize_t h1_read(void *call, uint8_t *buf, size_t len, uint32_t *flags)
{
    uint32_t h2_flags = 0;
    ssize_t n = grpc_h2_handler.stream_read(call, buf, len, &h2_flags);

    if (h2_flags & (H2_READ_EOF | H2_READ_EOF_END_STREAM))
        *flags |= HTTP1_READ_EOF;
    return n;
}

static void h1_close(void *call, int aborted)
{
    grpc_h2_handler.stream_close(call, aborted ? H2_CANCEL : H2_NO_ERROR);
}

const struct http1_handler grpc_http1_handler = {
    .request_open = h1_open,
    .request_header = h1_header,
    .request_headers_done = h1_headers_done,
    .request_data = h1_data,
    .request_end = h1_end,
    .request_read = h1_read,
    .request_close = h1_close,
};
