/* rpc: the handlers.  One file per service; each registers its methods on a
 * door and reads what it needs from the shared rpc_context.  Handlers read a
 * request, ask the store (through the gate) and the session core, and write
 * a response; they never see nghttp2 or SQL. */
#ifndef AGENTHUB_RPC_H
#define AGENTHUB_RPC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/bus.h"
#include "core/session.h"

struct grpc_server;
struct grpc_door;
struct grpc_call;
struct health_state;
struct store;
struct store_subject;
struct runner_registry;
struct stream_guards;

struct rpc_config {
    int has_runner_seam;            /* --runner-listen given */
    const char *blob_dir;           /* NULL: no blob storage */
    size_t max_blob_bytes;          /* one blob */
    size_t subscriber_buffer_bytes; /* a subscriber's backlog before it is dropped */
    uint32_t command_timeout_ms;    /* how long a control command waits for its ack */
    size_t runner_queue_bytes;      /* a Runner's commands not yet written */
    uint32_t max_report_sessions;   /* ids in one live-sessions report */
    uint32_t max_account_sessions;  /* open sessions per agent account; 0: no cap */
};

/* The agent acks a Runner relays (counted, relayed no further). */
enum { RPC_ACK_REPLAY_COMPLETE, RPC_ACK_CONTROL, RPC_ACK_DELIVERY, RPC_ACK_KINDS };

/* Counters published on /metrics. */
struct rpc_counters {
    uint64_t frames_accepted;
    uint64_t relay_gaps;
    uint64_t relay_retries;
    uint64_t relay_duplicates;    /* an idempotency_key seen before */
    uint64_t relay_stale_streams; /* frames on a stream of a Runner's previous run */
    uint64_t relay_acks[RPC_ACK_KINDS];
    uint64_t relay_unknown_frames;
    uint64_t relay_unbound_frames;
    uint64_t relay_ended_frames;
    uint64_t relay_invalid_records;
    uint64_t transcript_entries;
    uint64_t subscriber_lag_drops;
    uint64_t records_appended;
    uint64_t status_changes;
    uint64_t subscribers_open;
    uint64_t bus_subscribers_open;
    uint64_t session_quota_refusals; /* --max-sessions-per-account */
};
struct descriptor_index;

struct rpc_context {
    struct grpc_server *grpc;
    struct health_state *health;
    struct store *store;
    struct session_registry *sessions;
    struct bus *bus;
    struct runner_registry *runners;
    struct stream_guards *guards; /* open streams re-checked on store changes */
    struct rpc_config config;
    struct rpc_counters counters;
    struct descriptor_index *descriptors; /* reflection's, built by reflection_register */
};

/* --- Shared handler helpers (rpc_common.c) ------------------------------ */

/* grpc_method.door_flags bit: the method answers UNAVAILABLE on a server
 * without a Runner seam, before it looks at the caller. */
#define RPC_NEEDS_SEAM 0x1u

/* Makes DOOR authenticate the caller of every needs_caller method from its
 * request headers, before any request byte is accepted. */
void rpc_install_authenticator(struct grpc_door *door);

/* The caller of CALL: for a needs_caller method the subject resolved from
 * the request headers (always there: the call was refused otherwise).
 * Returns 0 with *SUBJECT filled; otherwise (only for a method without the
 * flag) finishes the call (UNAUTHENTICATED, or UNAVAILABLE when the store
 * could not answer) and returns -1. */
int rpc_authenticate(struct grpc_call *call, struct store_subject *subject);

/* 1 when CALL arrived on the Runner door. */
int rpc_on_runner_door(const struct grpc_call *call);

/* Finishes CALL with the refusal for a non-allowed gate result. */
void rpc_finish_gate_refusal(struct grpc_call *call, int gate_result);

/* Finishes CALL with "NAME: detail" under STATUS (the producer door's
 * error names). */
void rpc_finish_named(struct grpc_call *call, int status, const char *name, const char *detail);

/* Writes a protobuf varint field (wire type 0) into OUT (at least 11 bytes).
 * Returns the bytes written. */
size_t rpc_put_varint_field(uint8_t *out, uint32_t field, uint64_t value);

/* Prometheus text for the counters. */
void rpc_write_metrics(const struct rpc_context *ctx, FILE *out);

/* --- Services ------------------------------------------------------------ */

int health_register(struct rpc_context *ctx, struct grpc_door *door);
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

/* compass.v1.CompassService (public door). */
int compass_register(struct rpc_context *ctx, struct grpc_door *door);

/* compass.v1.RunnerService (Runner door). */
int runner_service_register(struct rpc_context *ctx, struct grpc_door *door);

/* compass.v1.ResourceService (both doors). */
int resource_register(struct rpc_context *ctx, struct grpc_door *door);

#endif
