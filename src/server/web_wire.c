/* web_wire: the door's plain HTTP responder, answering from src/web. */
#include "server/web_wire.h"

#include "grpc/grpc.h"
#include "web/web.h"

static void web_wire_respond(void *arg, struct grpc_call *call, const char *method,
                             const char *path)
{
    const struct web_site *site = arg;
    struct grpc_http_header headers[WEB_MAX_HEADERS];
    struct web_response r;

    web_respond(site, method, path, grpc_call_metadata(call, "if-none-match"), &r);
    for (size_t i = 0; i < r.header_count; i++)
        headers[i] = (struct grpc_http_header){r.headers[i].name, r.headers[i].value};
    /* The body is the site's static table (or web.c's static text). */
    grpc_call_http_respond(call, r.status, headers, r.header_count, r.body, r.body_len);
}

void web_wire_install(struct grpc_door *door, const struct web_site *site)
{
    grpc_door_set_http_responder(door, web_wire_respond, (void *)site);
}
