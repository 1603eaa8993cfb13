/* runner_remote: control commands for Runners connected to other nodes of
 * a cluster, over NATS request/reply (cluster/js_link.h).
 *
 * The node holding a Runner's Sessions stream serves the subject
 * agenthub.runner.<hex of the Runner id> (queue group agenthub-runners, so
 * one holder answers even while a replaced stream lingers elsewhere).  A
 * node that gets a command for a Runner it does not hold sends the encoded
 * SessionsResponse there; the holder queues it as its own
 * (runner_command_send) and answers with the outcome its Runner gave:
 * acknowledged, refused, never written (withdrawn at its
 * --command-timeout-ms), or written and unanswered.  The sender waits its
 * own --command-timeout-ms plus a margin, so the holder's verdict, which
 * comes by its deadline, normally arrives first: a command reported as not
 * delivered was withdrawn unwritten by its holder and is never written
 * later.  When no node serves the subject the command is not delivered
 * (UNAVAILABLE); when the holder itself goes silent the sender reports it
 * unanswered (it may have been delivered). */
#ifndef AGENTHUB_HUB_RUNNER_REMOTE_H
#define AGENTHUB_HUB_RUNNER_REMOTE_H

#include "hub/hub.h"
#include "hub/runner_control.h"

struct event_base;
struct js_link;
struct runner_remote;

extern const struct runner_remote_ops runner_remote_ops;

/* Returns the remote side for CTX's Runners over LINK, or NULL when memory
 * is short.  Install it with runner_registry_set_remote. */
struct runner_remote *runner_remote_new(struct hub *ctx, struct event_base *base,
                                        struct js_link *link);
/* After runner_registry_free (which may still release holds). */
void runner_remote_free(struct runner_remote *remote);

#endif
