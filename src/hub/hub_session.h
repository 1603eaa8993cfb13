/* hub_session: a session's life as the handlers see it.
 *
 * Handlers never reach core's session registry: they open, bind, stop and
 * close sessions, read their state, attach panes and report evidence here,
 * and the hub counts what it is asked to count (struct hub_counters).  The
 * core types a handler still names (struct session, a pane's watcher and
 * ring entries, the JSONL records of a call, the arbiter's states) come
 * with this header and hub.h. */
#ifndef AGENTHUB_HUB_SESSION_H
#define AGENTHUB_HUB_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "compass/v1/frames.pb-c.h"
#include "core/jsonl.h"
#include "core/session.h"
#include "hub/hub.h"

/* How hub_session_bind treats a binding S already has. */
enum hub_bind {
    HUB_BIND_IF_UNBOUND = 0, /* a default (the container's Runner): a binding made stays */
    HUB_BIND_ALWAYS = 1,     /* RUNNER_ID hosts the session now */
};

/* Binds S (NULL: nothing happens) to RUNNER_ID ("" binds nothing), the
 * Runner whose stream dropping tells its panes DISCONNECTED.  Best effort:
 * short of memory, the binding stays as it was. */
void hub_session_bind(struct session *s, const char *runner_id, enum hub_bind how);

/* SESSION_ID was stopped (closed in the store): its live session, if any,
 * says STOPPED without retracting the Stream evidence, so no fallback state
 * is published after it, and its log ends. */
void hub_session_stop(struct hub *ctx, const char *session_id);

/* SESSION_ID's resource was closed: its live session, if any, ends
 * (hub_end_session). */
void hub_session_close(struct hub *ctx, const char *session_id);

/* What GetAgentStatus says of a session. */
struct hub_session_view {
    Compass__V1__AgentSessionState state;
    uint64_t last_seq; /* newest seq of the live or retained log, 0 when none is held */
};

/* The view of SESSION_ID, CLOSED in the store or not: the live derived
 * state, STOPPED when closed (even while its log is storing the end), else
 * UNSPECIFIED. */
void hub_session_view(struct hub *ctx, const char *session_id, int closed,
                      struct hub_session_view *out);

enum hub_pane {
    HUB_PANE_OPEN = 0,       /* *OUT is the session to watch */
    HUB_PANE_UNRETAINED = 1, /* closed, and its log is no longer held */
    HUB_PANE_NOMEM = 2,
};

/* The session a pane of SESSION_ID watches: a closed one (CLOSED) is read
 * from what is retained of it; an open one the registry does not hold (yet,
 * or since a restart) is opened, and bound to RUNNER_ID (the Runner hosting
 * its container) unless bound already. */
enum hub_pane hub_session_for_pane(struct hub *ctx, const char *session_id, int closed,
                                   const char *runner_id, struct session **out);

/* WATCHER follows S from now on (a SubscribeAgentSession stream), counted
 * among the open subscribers until hub_pane_detach. */
void hub_pane_attach(struct hub *ctx, struct session *s, struct watcher *watcher);
/* WATCHER no longer follows S. */
void hub_pane_detach(struct hub *ctx, struct session *s, struct watcher *watcher);
/* A pane was ended because it fell behind (counted). */
void hub_pane_lagged(struct hub *ctx);

/* A SubscribeEvents stream opened (OPEN 1) or ended (0). */
void hub_bus_subscriber(struct hub *ctx, int open);

/* A Runner's ReportEvidence for SESSION_ID: its live session is bound to
 * RUNNER_ID and EVIDENCE observed at RANK (see hub_observe).  Returns
 * HUB_LIVE, HUB_ENDED (nothing changes for an ended session), HUB_FAULT or
 * HUB_NOMEM (nothing observed). */
enum hub_live hub_report_evidence(struct hub *ctx, const char *session_id, const char *runner_id,
                                  enum arbiter_rank rank, int evidence, int live_child);

/* A hook's ReportAgentState of STATE (an arbiter state) for S: with a live
 * child session the fallback state becomes a "state" record, otherwise it
 * is Hook evidence. */
void hub_report_hook_state(struct hub *ctx, struct session *s, int state);

/* Appends the parsed records of BATCH to S, each tracked by W, and counts
 * them.  Returns 0, or -1 when memory ran out part way (what was appended
 * stays). */
int hub_append_records(struct hub *ctx, struct session *s, const struct jsonl_batch *batch,
                       struct hub_log_wait *w);

/* 1 when the log holds the call keyed KEY[0..LEN) already, with its seqs in
 * W (a retry: nothing more is stored, and it is counted), else 0. */
int hub_records_recall(struct hub *ctx, struct session *s, const char *key, size_t len,
                       struct hub_log_wait *w);

#endif
