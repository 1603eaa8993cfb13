/* Helpers every handler shares: the door data, the hub's view of a call,
 * authentication, refusals. */
#include <stdio.h>
#include <string.h>

#include "grpc/grpc.h"
#include "rpc/rpc.h"
#include "store/auth.h"
#include "store/gate.h"

struct hub *rpc_hub(const struct grpc_call *call)
{
    const struct rpc_context *rpc = grpc_call_door_data(call);

    return rpc->hub;
}

const struct rpc_config *rpc_config(const struct grpc_call *call)
{
    const struct rpc_context *rpc = grpc_call_door_data(call);

    return &rpc->config;
}

enum auth_door rpc_door(const struct grpc_call *call)
{
    return grpc_call_door_kind(call) == AUTH_DOOR_RUNNER ? AUTH_DOOR_RUNNER : AUTH_DOOR_PUBLIC;
}

/* --- The hub's view of a call (hub/hub_stream.h) -------------------------- */

static void stream_finish(void *call, enum grpc_status status, const char *message)
{
    grpc_call_finish(call, (int)status, message);
}

static int stream_send(void *call, const uint8_t *bytes, size_t len)
{
    return grpc_call_send_encoded(call, NULL, 0, bytes, len);
}

static void stream_want_writable(void *call)
{
    grpc_call_want_writable(call);
}

static void stream_set_user(void *call, void *user)
{
    grpc_call_set_user(call, user);
}

static const char *stream_metadata(void *call, const char *name)
{
    return grpc_call_metadata(call, name);
}

static enum auth_door stream_door(void *call)
{
    return rpc_door(call);
}

static int stream_finished(void *call)
{
    return grpc_call_finished(call);
}

const struct hub_stream_ops rpc_stream_ops = {
    .finish = stream_finish,
    .send = stream_send,
    .want_writable = stream_want_writable,
    .set_user = stream_set_user,
    .metadata = stream_metadata,
    .door = stream_door,
    .finished = stream_finished,
};

/* The door authenticator: the Runner door first for methods that need it,
 * then the bearer token.  Returns a gRPC status (see grpc_authenticator). */
static int door_authenticate(struct grpc_call *call, const struct grpc_method *method, void *caller,
                             const char **message)
{
    struct hub *ctx = rpc_hub(call);
    const char *header = grpc_call_metadata(call, "authorization");
    enum auth_door door = rpc_door(call);
    int rv;

    if ((method->door_flags & RPC_NEEDS_RUNNER_DOOR) && !rpc_config(call)->has_runner_door) {
        *message = "this server has no Runner door";
        return GRPC_STATUS_UNAVAILABLE;
    }
    *message = AUTH_UNAUTHENTICATED_MESSAGE;
    if (!ctx->store) /* a door that attaches no caller identity is a wiring bug */
        return GRPC_STATUS_UNAUTHENTICATED;
    rv = auth_authenticate(ctx->store, door, header, header ? strlen(header) : 0, caller);
    if (rv == AUTH_OK)
        return GRPC_STATUS_OK;
    if (rv == AUTH_FAULT) {
        *message = GATE_FAULT_MESSAGE;
        return GRPC_STATUS_UNAVAILABLE;
    }
    return GRPC_STATUS_UNAUTHENTICATED;
}

static const struct grpc_authenticator door_authenticator = {
    .caller_size = sizeof(struct store_subject),
    .authenticate = door_authenticate,
};

void rpc_install_authenticator(struct grpc_door *door)
{
    grpc_door_set_authenticator(door, &door_authenticator);
}

int rpc_authenticate(struct grpc_call *call, struct store_subject *subject)
{
    struct hub *ctx = rpc_hub(call);
    const struct store_subject *caller = grpc_call_caller(call);
    const char *header = grpc_call_metadata(call, "authorization");
    enum auth_door door = rpc_door(call);
    int rv;

    if (caller) { /* resolved from the request headers */
        *subject = *caller;
        return 0;
    }
    /* A door that attaches no caller identity is a wiring bug: fail closed. */
    if (!ctx->store) {
        grpc_call_finish(call, GRPC_STATUS_UNAUTHENTICATED, AUTH_UNAUTHENTICATED_MESSAGE);
        return -1;
    }
    rv = auth_authenticate(ctx->store, door, header, header ? strlen(header) : 0, subject);
    if (rv == AUTH_OK)
        return 0;
    if (rv == AUTH_FAULT)
        grpc_call_finish(call, GRPC_STATUS_UNAVAILABLE, GATE_FAULT_MESSAGE);
    else
        grpc_call_finish(call, GRPC_STATUS_UNAUTHENTICATED, AUTH_UNAUTHENTICATED_MESSAGE);
    return -1;
}

void rpc_finish_gate_refusal(struct grpc_call *call, int gate_result)
{
    const struct gate_refusal *refusal = gate_refusal(gate_result);

    if (!refusal) {
        grpc_call_finish(call, GRPC_STATUS_INTERNAL, "internal error");
        return;
    }
    grpc_call_finish(call, refusal->status, refusal->message);
}

void rpc_finish_named(struct grpc_call *call, int status, const char *name, const char *detail)
{
    char message[512];

    snprintf(message, sizeof(message), "%s: %s", name, detail);
    grpc_call_finish(call, status, message);
}
