/* rpc: the handlers.  One file per service; each registers its methods on a
 * door and reads what it needs from the shared rpc_context. */
#ifndef AGENTHUB_RPC_H
#define AGENTHUB_RPC_H

#include <stdint.h>

struct grpc_server;
struct grpc_door;
struct health_state;
struct descriptor_index;

struct rpc_context {
    struct grpc_server *grpc;
    struct health_state *health;
    struct descriptor_index *descriptors; /* reflection's, built by reflection_register */
};

/* grpc.health.v1.Health on DOOR.  Returns 0 or -1. */
int health_register(struct rpc_context *ctx, struct grpc_door *door);
/* Creates the health state (serving).  Returns NULL when memory is short. */
struct health_state *health_new(void);
void health_free(struct health_state *health);
/* Every Check answers NOT_SERVING from now on, and Watch streams hear it. */
void health_set_draining(struct health_state *health);

/* grpc.reflection.v1 and v1alpha ServerReflection on DOOR; the first call
 * indexes the embedded descriptor set into ctx->descriptors.  Returns 0, or
 * -1 when the set does not parse, memory is short or a path is taken. */
int reflection_register(struct rpc_context *ctx, struct grpc_door *door);
/* Frees ctx->descriptors (NULL after).  Safe when nothing was built. */
void reflection_free(struct rpc_context *ctx);

/* agenthub.testing.v1.EchoService (test builds only).  Returns 0 or -1. */
int echo_register(struct rpc_context *ctx, struct grpc_door *door);

#endif
