/* web_door: the door's plain HTTP responder, answering from src/web. */
#include "server/web_door.h"

#include <string.h>

#include "grpc/grpc.h"
#include "web/web.h"

/* The answer being handed to the door: the door reads it right after the
 * responder returns, on the one event-loop thread, so one is enough. */
static struct {
    const struct web_site *site;
    struct web_response response;
    struct grpc_http_header headers[WEB_MAX_HEADERS];
} wire;

/* Answers GET and HEAD of anything but a gRPC method's path (a GET of that
 * stays the door's 405, other methods its usual refusals).  Returns 1 with
 * *OUT filled, or 0 to leave the request to the door. */
static int web_door_respond(void *arg, struct grpc_call *call, const char *method, const char *path,
                            struct grpc_http_response *out)
{
    struct web_response *r = &wire.response;
    size_t n = 0;

    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return 0;
    if (grpc_door_has_method(grpc_call_door(call), path))
        return 0;
    /* The door sends HEAD's headers without the body, and says the length. */
    web_respond(wire.site, "GET", path, grpc_call_metadata(call, "if-none-match"), r);
    for (size_t i = 0; i < r->header_count; i++)
        if (strcmp(r->headers[i].name, "content-length") != 0)
            wire.headers[n++] = (struct grpc_http_header){r->headers[i].name, r->headers[i].value};
    out->status = r->status;
    out->headers = wire.headers;
    out->header_count = n;
    out->body = r->body;
    out->body_len = r->body_len;
    return 1;
}

void web_door_install(struct grpc_door *door, const struct web_site *site)
{
    wire.site = site;
    grpc_door_set_http_responder(door, web_door_respond, NULL);
}
