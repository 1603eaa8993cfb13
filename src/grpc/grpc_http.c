/* grpc_http: plain HTTP requests on a door (a browser's GET of a page),
 * answered by the responder the program installed instead of refused as
 * bad gRPC.  The call is never started as gRPC: no method, no caller, no
 * status counted under a method. */
#include <stdio.h>
#include <string.h>

#include "grpc/grpc_internal.h"
#include "h2/h2.h"

/* Headers an answer may carry, :status included. */
#define HTTP_MAX_HEADERS 24

void grpc_door_set_http_responder(struct grpc_door *door, grpc_http_responder responder, void *arg)
{
    door->http_responder = responder;
    door->http_responder_arg = arg;
}

int grpc_http_dispatch(struct grpc_call *call)
{
    const char *path = grpc_call_metadata(call, ":path");

    if (!call->door->http_responder)
        return 0;
    if (strcmp(call->http_method, "GET") != 0 && strcmp(call->http_method, "HEAD") != 0)
        return 0;
    /* A method's path exists, as a gRPC method: a GET of it is 405, as
     * without a responder. */
    if (path && grpc_door_find(call->door, path, strlen(path)))
        return 0;
    call->door->http_responder(call->door->http_responder_arg, call, call->http_method,
                               path ? path : "");
    return 1;
}

int grpc_call_http_respond(struct grpc_call *call, int status,
                           const struct grpc_http_header *headers, size_t count,
                           const uint8_t *body, size_t body_len)
{
    struct h2_header out[HTTP_MAX_HEADERS];
    char status_buf[12];
    size_t n = 0;

    if (!call->stream || call->finished)
        return -1;
    snprintf(status_buf, sizeof(status_buf), "%d", status);
    out[n++] = (struct h2_header){":status", 7, status_buf, strlen(status_buf)};
    for (size_t i = 0; i < count && n < HTTP_MAX_HEADERS; i++)
        out[n++] = (struct h2_header){headers[i].name, strlen(headers[i].name), headers[i].value,
                                      strlen(headers[i].value)};
    call->finished = call->headers_sent = call->trailers_sent = 1;
    call->http_body = body_len ? body : NULL;
    call->http_body_left = body_len;
    /* A request body (GET has none, but a client may send one) is thrown
     * away as it comes: the call is finished. */
    return call->transport->respond(call->stream, out, n, body_len > 0) != 0 ? -1 : 0;
}

ssize_t grpc_http_read(struct grpc_call *call, uint8_t *buf, size_t len, uint32_t *flags)
{
    if (len > call->http_body_left)
        len = call->http_body_left;
    memcpy(buf, call->http_body, len);
    call->http_body += len;
    call->http_body_left -= len;
    if (call->http_body_left == 0)
        *flags |= H2_READ_EOF_END_STREAM;
    return (ssize_t)len;
}
