/* hub_relay: what becomes of each frame a Runner publishes.
 *
 * One struct hub_relay per PublishEvents stream.  Every frame is decided
 * here, in this order: its runner_seq's range, the stream's run (a plain
 * Enroll since it opened makes it stale), the log's readiness, a retry or a
 * duplicate (hub/runner_seq.h), an unknown variant, the session's binding
 * to the Runner (trusted for HUB_RELAY_BINDING_TRUST_MS once checked), what
 * the frame is (a transcript entry and an agent's ack are counted only),
 * whether the session still lives, and the record it carries.  The verdict says which
 * it was; the hub counts it (struct hub_counters) and moves the Runner's
 * mark, and the handler only maps the verdicts that end the stream to a
 * status (hub_relay_verdict_ends_stream).
 *
 * A gap (runner_seq past the mark + 1) loses nothing here: the frame is
 * decided as any other, and the skipped count is reported beside the
 * verdict. */
#ifndef AGENTHUB_HUB_RELAY_H
#define AGENTHUB_HUB_RELAY_H

#include <stdint.h>

#include "compass/v1/services.pb-c.h"
#include "hub/hub.h"
#include "hub/hub_stream.h"
#include "hub/stream_guard.h"
#include "store/store.h"

struct runner_run;

/* How long a stream trusts one binding check. */
#define HUB_RELAY_BINDING_TRUST_MS 1000

/* One PublishEvents stream; the caller owns the memory, the fields are the
 * hub's (read them through the functions below). */
struct hub_relay {
    struct hub *ctx;
    struct hub_stream stream;
    char runner_id[STORE_ID_MAX]; /* the Runner the stream opened as */
    struct store_subject subject; /* refreshed by each re-check */
    struct runner_run *run;
    uint64_t run_number; /* the run the stream was opened in */
    char bound_session[STORE_ID_MAX];
    int64_t bound_at_ms;
    struct stream_guard guard;
};

enum hub_relay_verdict {
    HUB_RELAY_ACCEPTED = 0,   /* relayed into the session (its log took it) */
    HUB_RELAY_RETRY = 1,      /* runner_seq at or below this run's mark: dropped */
    HUB_RELAY_DUPLICATE = 2,  /* its idempotency_key was seen before: dropped */
    HUB_RELAY_UNKNOWN = 3,    /* an unset or unknown variant, or an empty frame: dropped */
    HUB_RELAY_UNBOUND = 4,    /* the session is unknown or another Runner's: dropped */
    HUB_RELAY_TRANSCRIPT = 5, /* a transcript entry: counted, relayed no further */
    HUB_RELAY_ACK = 6,        /* an agent's ack: counted, relayed no further */
    HUB_RELAY_ENDED = 7,      /* the session has ended: dropped */
    HUB_RELAY_BAD_RECORD = 8, /* a record the JSONL codec refuses: dropped */
    /* The stream ends with these; the frame is not dealt with, so a
     * resuming Runner sends it again. */
    HUB_RELAY_SEQ_RANGE = 9,    /* runner_seq 0 or past INT64_MAX: INVALID_ARGUMENT */
    HUB_RELAY_STALE = 10,       /* the Runner enrolled again since the stream opened: ABORTED */
    HUB_RELAY_LOG_DOWN = 11,    /* the session log takes no appends: UNAVAILABLE */
    HUB_RELAY_STORE_FAULT = 12, /* the store could not say: UNAVAILABLE */
    HUB_RELAY_NOMEM = 13,       /* the session could not be opened: RESOURCE_EXHAUSTED */
};

/* 1 when VERDICT ends the stream, else 0 (the stream goes on). */
int hub_relay_verdict_ends_stream(enum hub_relay_verdict verdict);

/* Starts RELAY for STREAM, whose Runner SUBJECT is authenticated, in the
 * Runner's current run, and guards it: a revoked token ends STREAM
 * UNAUTHENTICATED, and a binding that moved is noticed by the next frame.
 * Returns 0, or -1 when the store cannot read the Runner's run (nothing is
 * registered; the caller answers UNAVAILABLE). */
int hub_relay_open(struct hub *ctx, struct hub_relay *relay, struct hub_stream stream,
                   const struct store_subject *subject);

/* Decides REQUEST, a frame on RELAY's stream, and relays it when it is
 * accepted.  *SKIPPED (may be NULL) is how many runner_seq values it
 * jumped over, 0 without a gap. */
enum hub_relay_verdict hub_relay_frame(struct hub_relay *relay,
                                       const Compass__V1__PublishEventsRequest *request,
                                       uint64_t *skipped);

/* The Runner half-closed: may it hear OK now?  Returns 1 when everything it
 * sent is stored; 0 when W->done runs once the log's own thread committed
 * it (maybe it already ran), ok 0 when it could not. */
int hub_relay_sync(struct hub_relay *relay, struct hub_log_wait *w);

/* RELAY's stream is over: its guard goes and the Runner's mark is written.
 * RELAY may be freed afterwards. */
void hub_relay_close(struct hub_relay *relay);

#endif
