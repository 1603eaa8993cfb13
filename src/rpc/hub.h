/* hub: where accepted frames become ring entries and bus events.
 *
 * Every producer path (relayed compass.v1 frames, JSONL records from hook
 * shims, Runner evidence) ends here, so the ring (SubscribeAgentSession) and
 * the bus (SubscribeEvents) always tell the same story.
 *
 * Ring entries are AgentSessionFrame encodings WITHOUT seq (4) and
 * at_unix_ms (5); subscribers write those two fields in front on delivery.
 * Bus payloads are SubscribeEventsResponse encodings without fields 1..3. */
#ifndef AGENTHUB_HUB_H
#define AGENTHUB_HUB_H

#include <stdint.h>

#include "compass/v1/frames.pb-c.h"
#include "core/arbiter.h"
#include "core/session.h"
#include "rpc/rpc.h"

/* The live session SESSION_ID, opened in the registry when it is not yet
 * there.  Returns NULL when memory is short or the id is unusable. */
struct session *hub_session(struct rpc_context *ctx, const char *session_id);

enum hub_live {
    HUB_LIVE = 0,  /* *OUT is the live session */
    HUB_ENDED = 1, /* the session is closed in the store: never reopened */
    HUB_FAULT = 2, /* the store could not say */
    HUB_NOMEM = 3,
};

/* May one more session of agent account AGENT_ACCOUNT_ID be opened (created,
 * or a closed one reopened)?  Returns 0; or -1 after finishing CALL with
 * RESOURCE_EXHAUSTED when the account already has
 * config.max_account_sessions open sessions, or UNAVAILABLE when the store
 * cannot count them. */
int hub_session_quota(struct grpc_call *call, const char *agent_account_id);

/* Prometheus text for the retained logs of ended sessions (expiring the
 * too old first), the session logs' budget, the open-session cap, the
 * Runners' command queues and the guarded streams. */
void hub_write_metrics(const struct rpc_context *ctx, FILE *out);

/* Like hub_session, for producers into an existing session: a session that
 * is not in the registry is reopened only when the store says it is still
 * open, so late frames never resurrect a stopped or closed session. */
enum hub_live hub_live_session(struct rpc_context *ctx, const char *session_id,
                               struct session **out);

/* Appends EVENT to S (stamped now), projects it onto the bus, and feeds the
 * Stream evidence it carries to the arbiter: a typed tool call's own, or for
 * a record RECORD_EVIDENCE (the caller parsed it: arbiter_evidence_for_record,
 * or ARBITER_NONE).  Returns the frame's seq, or 0 when nothing was appended
 * (memory, or S has ended). */
uint64_t hub_append_event(struct rpc_context *ctx, struct session *s,
                          const Compass__V1__SessionEvent *event, int record_evidence);

/* Records EVIDENCE at RANK (see arbiter_observe).  A change of the derived
 * state appends a state frame and publishes AgentSessionStatus; a terminal
 * state (STOPPED, ERRORED) ends S's tail after its frame, so its panes end,
 * and any other state after one starts a new tail. */
void hub_observe(struct rpc_context *ctx, struct session *s, enum arbiter_rank rank, int evidence,
                 int live_child);

/* Publishes STATE for S as a state frame and AgentSessionStatus without
 * asking the arbiter (transport facts such as DISCONNECTED, STOPPED); it is
 * S's reported state until evidence derives another. */
void hub_announce_state(struct rpc_context *ctx, struct session *s, int state);

/* Re-derives S's state from its evidence and publishes it, changed or not
 * (a Runner's report after a reconnect). */
void hub_announce_derived(struct rpc_context *ctx, struct session *s);

/* Ends S: the Stream evidence is retracted, its subscribers drain and
 * finish, and its log stays readable within the retention bounds.  S must
 * not be used afterwards. */
void hub_end_session(struct rpc_context *ctx, struct session *s);

#endif
