/* runner_control: the connected Runners and the commands sent to them over
 * their Sessions control streams.
 *
 * One Sessions stream per Runner; a second replaces the first.  A command
 * carries a request_id; the Runner answers with a SessionsRequest of the same
 * request_id, which completes the command.  A command whose Runner is gone,
 * whose stream drops, or that waits past the timeout completes as failed. */
#ifndef AGENTHUB_RUNNER_CONTROL_H
#define AGENTHUB_RUNNER_CONTROL_H

#include <stdint.h>

#include "compass/v1/services.pb-c.h"
#include "rpc/rpc.h"

struct event_base;

/* OK is 1 when the Runner acknowledged with ok; ERROR is its text. */
typedef void (*runner_command_done)(void *arg, int ok, const char *error);

struct runner_registry *runner_registry_new(struct event_base *base);
void runner_registry_free(struct runner_registry *runners);

/* 1 when RUNNER_ID has a Sessions stream open. */
int runner_connected(const struct runner_registry *runners, const char *runner_id);

/* Sends COMMAND (its request_id is filled in here) to RUNNER_ID.  DONE runs
 * exactly once, later, unless the command is abandoned first.  Returns the
 * command's id (nonzero), or 0 when the Runner is not connected. */
uint64_t runner_command_send(struct rpc_context *ctx, const char *runner_id,
                             Compass__V1__SessionsResponse *command, runner_command_done done,
                             void *arg);

/* The waiter went away: DONE will not run. */
void runner_command_abandon(struct rpc_context *ctx, uint64_t command_id);

/* The last runner_seq accepted from RUNNER_ID, read from the store on first
 * use and kept in memory after.  Returns 0 with *SLOT set, or -1 when the
 * store cannot answer (or memory is short). */
int runner_seq_slot(struct rpc_context *ctx, const char *runner_id, uint64_t **slot);

/* Writes RUNNER_ID's last accepted runner_seq to the store (best effort; a
 * failure is logged and retried at the next persist). */
void runner_seq_persist(struct rpc_context *ctx, const char *runner_id);

/* RunnerService/Sessions. */
extern const struct grpc_method runner_sessions_method;

#endif
