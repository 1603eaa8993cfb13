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

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compass/v1/frames.pb-c.h"
#include "core/arbiter.h"
#include "core/bus.h"
#include "core/session.h"
#include "hub/hub_log.h"
#include "hub/hub_stream.h"

struct store;
struct store_subject;
struct runner_registry;
struct stream_guards;
struct hub_snapshot;
struct event_base;

/* What the hub itself reads; the handlers' own settings are in
 * struct rpc_config (rpc/rpc.h). */
struct hub_config {
    uint32_t command_timeout_ms;   /* how long a control command waits for its ack */
    size_t runner_queue_bytes;     /* a Runner's commands not yet written */
    uint32_t max_report_sessions;  /* ids in one live-sessions report */
    uint32_t max_account_sessions; /* open sessions per agent account; 0: no cap */
    /* The session log is this node's disk (hub_log_disk): a Runner's
     * PublishEvents answers OK once its frames are committed
     * (hub_log_runner_sync covers everything taken so far), and readers
     * keep being served while the disk takes no appends. */
    int log_on_disk;
};

/* The agent acks a Runner relays (counted, relayed no further). */
enum { HUB_ACK_REPLAY_COMPLETE, HUB_ACK_CONTROL, HUB_ACK_DELIVERY, HUB_ACK_KINDS };

/* Counters published on /metrics. */
struct hub_counters {
    uint64_t frames_accepted;
    uint64_t relay_gaps;
    uint64_t relay_retries;
    uint64_t relay_duplicates;    /* an idempotency_key seen before */
    uint64_t relay_stale_streams; /* frames on a stream of a Runner's previous run */
    uint64_t relay_acks[HUB_ACK_KINDS];
    uint64_t relay_unknown_frames;
    uint64_t relay_unbound_frames;
    uint64_t relay_ended_frames;
    uint64_t relay_invalid_records;
    uint64_t transcript_entries;
    uint64_t subscriber_lag_drops;
    uint64_t records_appended;
    uint64_t records_retried; /* keyed calls the log held already */
    uint64_t status_changes;
    uint64_t subscribers_open;
    uint64_t bus_subscribers_open;
    uint64_t session_quota_refusals; /* --max-sessions-per-account */
};

/* The session path's state, shared by every handler (rpc reaches it
 * through its door data, struct rpc_context). */
struct hub {
    struct store *store;
    struct session_registry *sessions;
    struct bus *bus;               /* the memory log's bus (its metrics) */
    struct hub_snapshot *snapshot; /* for since_seq = 0 subscribers; NULL: none */
    struct event_base *base;       /* for the handlers' timers; NULL: none */
    struct hub_log log;            /* session logs and the bus: read and write through this */
    struct runner_registry *runners;
    struct stream_guards *guards; /* open streams re-checked on store changes */
    struct hub_config config;
    struct hub_counters counters;
};

/* The live session SESSION_ID, opened in the registry when it is not yet
 * there.  Returns NULL when memory is short or the id is unusable. */
struct session *hub_session(struct hub *ctx, const char *session_id);

enum hub_live {
    HUB_LIVE = 0,  /* *OUT is the live session */
    HUB_ENDED = 1, /* the session is closed in the store: never reopened */
    HUB_FAULT = 2, /* the store could not say */
    HUB_NOMEM = 3,
};

/* May one more session of agent account AGENT_ACCOUNT_ID be opened (created,
 * or a closed one reopened)?  Returns 0; or -1 after ending STREAM with
 * RESOURCE_EXHAUSTED when the account already has
 * config.max_account_sessions open sessions, or UNAVAILABLE when the store
 * cannot count them. */
int hub_session_quota(struct hub *ctx, struct hub_stream stream, const char *agent_account_id);

/* Prometheus text for the counters (struct hub_counters) and the live
 * sessions. */
void hub_write_counters(const struct hub *ctx, FILE *out);

/* Prometheus text for the retained logs of ended sessions (expiring the
 * too old first), the session logs' budget, the open-session cap, the
 * Runners' command queues and the guarded streams. */
void hub_write_metrics(const struct hub *ctx, FILE *out);

/* Like hub_session, for producers into an existing session: a session that
 * is not in the registry is reopened only when the store says it is still
 * open, so late frames never resurrect a stopped or closed session. */
enum hub_live hub_live_session(struct hub *ctx, const char *session_id, struct session **out);

/* Appends EVENT to S (stamped now), projects it onto the bus, and feeds the
 * Stream evidence it carries to the arbiter: a typed tool call's own, or for
 * a record RECORD_EVIDENCE (the caller parsed it: arbiter_evidence_for_record,
 * or ARBITER_NONE).  Returns the frame's seq, or 0 when nothing was appended
 * (memory, or S has ended). */
uint64_t hub_append_event(struct hub *ctx, struct session *s,
                          const Compass__V1__SessionEvent *event, int record_evidence);

/* hub_append_event whose frame W tracks: once every frame a producer
 * appended is tracked, hub_log_stored tells whether they are stored
 * already (the memory log: always, with their seqs in W), and otherwise
 * hub_log_wait runs W->done when the replicated log acknowledged them or
 * could not store them in time.  Returns the frame's seq, or 0 as
 * hub_append_event. */
uint64_t hub_append_tracked(struct hub *ctx, struct session *s,
                            const Compass__V1__SessionEvent *event, int record_evidence,
                            struct hub_log_wait *w);

/* Records EVIDENCE at RANK (see arbiter_observe).  A change of the derived
 * state appends a state frame and publishes AgentSessionStatus; a terminal
 * state (STOPPED, ERRORED) ends S's tail after its frame, so its panes end,
 * and any other state after one starts a new tail. */
void hub_observe(struct hub *ctx, struct session *s, enum arbiter_rank rank, int evidence,
                 int live_child);

/* Publishes STATE for S as a state frame and AgentSessionStatus without
 * asking the arbiter (transport facts such as DISCONNECTED, STOPPED); it is
 * S's reported state until evidence derives another. */
void hub_announce_state(struct hub *ctx, struct session *s, int state);

/* Re-derives S's state from its evidence and publishes it, changed or not
 * (a Runner's report after a reconnect). */
void hub_announce_derived(struct hub *ctx, struct session *s);

/* Ends S: its state becomes STOPPED (Stream evidence), its subscribers drain and
 * finish, and its log stays readable within the retention bounds.  S must
 * not be used afterwards. */
void hub_end_session(struct hub *ctx, struct session *s);

#endif
