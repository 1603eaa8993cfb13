/* grpc.health.v1.Health: Check and Watch. */
#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "grpc/grpc.h"
#include "grpc/health/v1/health.pb-c.h"
#include "hub/hub.h"
#include "rpc/rpc.h"
#include "store/store.h"

struct health_watcher {
    struct grpc_call *call;
    char *service;
    int last_status;
    struct list_node link; /* on the state's watchers */
};

struct health_state {
    int draining;
    struct list_node watchers; /* struct health_watcher, the newest first */
};

struct service_lookup {
    const char *name;
    int found;
};

struct health_state *health_new(void)
{
    struct health_state *health = calloc(1, sizeof(*health));

    if (health)
        list_init(&health->watchers);
    return health;
}

void health_free(struct health_state *health)
{
    free(health);
}

static void match_service(const char *service, size_t len, void *arg)
{
    struct service_lookup *lookup = arg;
    if (strlen(lookup->name) == len && memcmp(lookup->name, service, len) == 0)
        lookup->found = 1;
}

/* The status for SERVICE on the door CALL came in on: "" means the whole
 * server; a service that door does not serve is unknown there.  STORE_OK
 * is whether the ownership store can answer now. */
static int status_for(struct grpc_call *call, struct rpc_context *ctx, const char *service,
                      int store_ok)
{
    struct service_lookup lookup = {service, 0};

    if (service[0] != '\0') {
        grpc_door_each_service(grpc_call_door(call), match_service, &lookup);
        if (!lookup.found)
            return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
    }
    /* A store that cannot answer (PostgreSQL unreachable) or a session log
     * that cannot take appends (JetStream unreachable) fails the calls that
     * need it: a load balancer should send traffic elsewhere. */
    return ctx->health->draining || !store_ok || !hub_log_writable(&ctx->hub->log)
               ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
               : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
}

static int health_status(struct grpc_call *call, struct rpc_context *ctx, const char *service)
{
    return status_for(call, ctx, service, store_ping(ctx->hub->store) == STORE_OK);
}

static void send_status(struct grpc_call *call, int status)
{
    Grpc__Health__V1__HealthCheckResponse response = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    response.status = status;
    grpc_call_send(call, &response.base);
}

static void check_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Grpc__Health__V1__HealthCheckRequest *request =
        (const Grpc__Health__V1__HealthCheckRequest *)message;
    struct rpc_context *ctx = grpc_call_door_data(call);
    int status = health_status(call, ctx, request->service);

    if (status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN) {
        grpc_call_finish(call, GRPC_STATUS_NOT_FOUND, "unknown service");
        return;
    }
    send_status(call, status);
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static void watch_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const Grpc__Health__V1__HealthCheckRequest *request =
        (const Grpc__Health__V1__HealthCheckRequest *)message;
    struct rpc_context *ctx = grpc_call_door_data(call);
    struct health_watcher *watcher = calloc(1, sizeof(*watcher));

    if (!watcher || !(watcher->service = strdup(request->service))) {
        free(watcher);
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    watcher->call = call;
    watcher->last_status = health_status(call, ctx, request->service);
    list_insert_head(&ctx->health->watchers, &watcher->link);
    grpc_call_set_user(call, watcher);
    send_status(call, watcher->last_status);
}

static void watch_on_close(struct grpc_call *call)
{
    struct health_watcher *watcher = grpc_call_user(call);

    if (!watcher)
        return;
    list_remove(&watcher->link);
    free(watcher->service);
    free(watcher);
}

void health_set_draining(struct health_state *health)
{
    struct list_node *node, *next;

    health->draining = 1;
    /* The safe walk: it still holds should a send ever close its call at
     * once, which unlinks and frees that watcher. */
    list_for_each_safe (node, next, &health->watchers) {
        struct health_watcher *w = list_entry(node, struct health_watcher, link);
        if (w->last_status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING) {
            w->last_status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
            send_status(w->call, w->last_status);
        }
    }
}

void health_recheck(struct rpc_context *ctx)
{
    struct list_node *node, *next;
    int store_ok, status;

    if (!ctx->health || list_is_empty(&ctx->health->watchers))
        return;
    store_ok = store_ping(ctx->hub->store) == STORE_OK; /* once for every watcher */
    list_for_each_safe (node, next, &ctx->health->watchers) {
        struct health_watcher *w = list_entry(node, struct health_watcher, link);
        status = status_for(w->call, ctx, w->service, store_ok);
        if (status != w->last_status) {
            w->last_status = status;
            send_status(w->call, status);
        }
    }
}

static const struct grpc_method health_methods[] = {
    {
        .path = "/grpc.health.v1.Health/Check",
        .kind = GRPC_METHOD_UNARY,
        .request_type = &grpc__health__v1__health_check_request__descriptor,
        .response_type = &grpc__health__v1__health_check_response__descriptor,
        .on_message = check_on_message,
    },
    {
        .path = "/grpc.health.v1.Health/Watch",
        .kind = GRPC_METHOD_SERVER_STREAMING,
        .request_type = &grpc__health__v1__health_check_request__descriptor,
        .response_type = &grpc__health__v1__health_check_response__descriptor,
        .on_message = watch_on_message,
        .on_close = watch_on_close,
    },
};

int health_register(struct rpc_context *ctx, struct grpc_door *door)
{
    for (size_t i = 0; i < sizeof(health_methods) / sizeof(health_methods[0]); i++)
        if (grpc_door_register(door, &health_methods[i]) != 0)
            return -1;
    return 0;
}
