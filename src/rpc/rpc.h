/* rpc: the handlers.  One file per service; each registers its methods on a
 * door and reads the hub (hub/hub.h) through the door's data, a struct
 * rpc_context.  Handlers read a
 * request, ask the store (through the gate) and the session core, and write
 * a response; they never see nghttp2 or SQL. */
#ifndef AGENTHUB_RPC_H
#define AGENTHUB_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hub/hub.h"
#include "hub/hub_stream.h"
#include "store/auth.h"

struct descriptor_index;
struct grpc_door;
struct grpc_call;
struct health_state;
struct store_subject;

/* The handlers' own settings (the hub's are struct hub_config). */
struct rpc_config {
    int has_runner_door;            /* --runner-listen given */
    const char *blob_dir;           /* NULL: no blob storage */
    size_t max_blob_bytes;          /* one blob */
    size_t subscriber_buffer_bytes; /* a subscriber's backlog before it is dropped */
};

/* What the handlers share: every door's door data.  The hub is the
 * session path's; the rest is the handlers' own. */
struct rpc_context {
    struct hub *hub;
    struct rpc_config config;
    struct health_state *health;          /* health.c's serving status and watchers */
    struct descriptor_index *descriptors; /* reflection's, built by reflection_register */
};

/* --- Shared handler helpers (rpc_common.c) ------------------------------ */

/* The hub of the door CALL arrived on. */
struct hub *rpc_hub(const struct grpc_call *call);

/* The handlers' settings of the door CALL arrived on. */
const struct rpc_config *rpc_config(const struct grpc_call *call);

/* CALL as the hub sees it (hub/hub_stream.h): the ops act on the call. */
extern const struct hub_stream_ops rpc_stream_ops;
static inline struct hub_stream rpc_stream(struct grpc_call *call)
{
    return (struct hub_stream){&rpc_stream_ops, call};
}

/* grpc_method.door_flags bit: the method answers UNAVAILABLE on a server
 * without a Runner door, before it looks at the caller. */
#define RPC_NEEDS_RUNNER_DOOR 0x1u

/* Makes DOOR authenticate the caller of every needs_caller method from its
 * request headers, before any request byte is accepted. */
void rpc_install_authenticator(struct grpc_door *door);

/* The caller of CALL: for a needs_caller method the subject resolved from
 * the request headers (always there: the call was refused otherwise).
 * Returns 0 with *SUBJECT filled; otherwise (only for a method without the
 * flag) finishes the call (UNAUTHENTICATED, or UNAVAILABLE when the store
 * could not answer) and returns -1. */
int rpc_authenticate(struct grpc_call *call, struct store_subject *subject);

/* The door CALL arrived on, by the kind main gave it (grpc_door_set_kind):
 * AUTH_DOOR_RUNNER for the Runner door, else AUTH_DOOR_PUBLIC. */
enum auth_door rpc_door(const struct grpc_call *call);

/* Finishes CALL with the refusal for a non-allowed gate result. */
void rpc_finish_gate_refusal(struct grpc_call *call, int gate_result);

/* Finishes CALL with "NAME: detail" under STATUS (the producer door's
 * error names). */
void rpc_finish_named(struct grpc_call *call, int status, const char *name, const char *detail);

/* --- Services ------------------------------------------------------------ */

int health_register(struct rpc_context *rpc, struct grpc_door *door);
struct health_state *health_new(void);
void health_free(struct health_state *health);
/* Every Check answers NOT_SERVING from now on, and Watch streams hear it. */
void health_set_draining(struct health_state *health);
/* Decides every Watch stream's status again (the store or the session log
 * may have become unreachable, or reachable again) and sends the ones that
 * changed.  Called once a second for a PostgreSQL store, and when the
 * cluster's session log starts or stops taking appends. */
void health_recheck(struct rpc_context *rpc);

/* grpc.reflection.v1 and v1alpha ServerReflection on DOOR; the first call
 * indexes the embedded descriptor set into rpc->descriptors.  Returns 0, or
 * -1 when the set does not parse, memory is short or a path is taken. */
int reflection_register(struct rpc_context *rpc, struct grpc_door *door);
/* Frees rpc->descriptors (NULL after).  Safe when nothing was built. */
void reflection_free(struct rpc_context *rpc);

/* agenthub.testing.v1.EchoService (test builds only).  Returns 0 or -1. */
int echo_register(struct rpc_context *rpc, struct grpc_door *door);

/* compass.v1.CompassService (public door): its unary methods (compass.c)
 * its two subscriptions (compass_stream_register) and its token
 * administration (compass_tokens_register). */
int compass_register(struct rpc_context *rpc, struct grpc_door *door);

/* CompassService's SubscribeAgentSession and SubscribeEvents. */
int compass_stream_register(struct rpc_context *rpc, struct grpc_door *door);

/* CompassService's IssueToken and RevokeToken (admin accounts only). */
int compass_tokens_register(struct rpc_context *rpc, struct grpc_door *door);

/* compass.v1.RunnerService (Runner door). */
int runner_service_register(struct rpc_context *rpc, struct grpc_door *door);

/* compass.v1.ResourceService (both doors). */
int resource_register(struct rpc_context *rpc, struct grpc_door *door);

#endif
