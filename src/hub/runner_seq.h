/* runner_seq: where each Runner stands in its runner_seq, and which of its
 * frames were already delivered.
 *
 * runner_seq numbers the frames of one run of a Runner (an incarnation).  A
 * plain Enroll starts a new run: the high-water mark goes back to 0 (and is
 * stored at once), so a Runner whose process restarted and counts from 1
 * again loses nothing.  An Enroll with resume continues the run the server
 * knows, from the stored mark after a server restart.  Within a run a frame
 * at or below the mark is a resend (a retry) and is dropped; a jump past
 * mark + 1 is a gap, counted, and nothing is dropped for it.
 *
 * Across runs, a frame whose idempotency_key (with its session id) was seen
 * among the Runner's last keyed frames is a duplicate and is dropped too
 * (core/keyset.h says how many are remembered; in memory only).
 *
 * A PublishEvents stream belongs to the run it was opened in: after a plain
 * Enroll, frames on an older stream are refused (hub_relay.c). */
#ifndef AGENTHUB_RPC_RUNNER_SEQ_H
#define AGENTHUB_RPC_RUNNER_SEQ_H

#include <stdint.h>
#include <stdio.h>

#include "core/keyset.h"
#include "hub/hub.h"

struct runner_runs;
struct runner_run;

struct runner_runs *runner_runs_new(void);
void runner_runs_free(struct runner_runs *runs);

/* RUNNER_ID's run, read from the store on first use (the stored mark
 * continues) and kept in memory after; the pointer stays valid until the
 * registry is freed.  Returns 0 with *RUN set, or -1 when the store cannot
 * answer (or memory is short). */
int runner_run_get(struct hub *ctx, const char *runner_id, struct runner_run **run);

/* Takes in what the session log knows of RUN's Runner (a cluster's other
 * nodes' frames): its mark moves up to the log's, and a new run begun
 * through another node starts a new run here too (this node's streams of
 * the old one become stale). */
void runner_run_sync(struct hub *ctx, struct runner_run *run);

enum runner_enroll {
    RUNNER_ENROLL_DONE = 0,  /* *LAST is the mark */
    RUNNER_ENROLL_WAIT = 1,  /* W->done runs (maybe already ran); then runner_run_enrolled */
    RUNNER_ENROLL_FAULT = 2, /* the store cannot answer; nothing changed */
};

/* Enroll of RUNNER_ID: with RESUME its run continues, else a new run
 * starts at mark 0.  Returns DONE with *LAST the mark the Runner continues
 * after; WAIT when the session log keeps the marks (a cluster): W->done
 * runs once this node's copy holds everything written for the Runner
 * before (ok 0: it cannot now, answer UNAVAILABLE), then
 * runner_run_enrolled gives the mark. */
enum runner_enroll runner_run_enroll(struct hub *ctx, const char *runner_id, int resume,
                                     uint64_t *last, struct hub_log_wait *w);
/* The mark RUN continues after, once runner_run_enroll's wait is done:
 * the log's, which covers only frames it holds. */
uint64_t runner_run_enrolled(struct hub *ctx, struct runner_run *run);

/* Which run RUN is in: it changes at every plain Enroll. */
uint64_t runner_run_number(const struct runner_run *run);

enum runner_frame {
    RUNNER_FRAME_NEW = 0,
    RUNNER_FRAME_RETRY = 1,     /* runner_seq at or below the mark of this run */
    RUNNER_FRAME_DUPLICATE = 2, /* a later runner_seq, but its key was seen */
};

/* What a frame at SEQ is; FP is its key's fingerprint, NULL without one. */
enum runner_frame runner_run_check(const struct runner_run *run, uint64_t seq,
                                   const struct keyset_fp *fp);

/* The frame at SEQ (above the mark) is dealt with for good, relayed or
 * dropped: the mark moves to SEQ and FP (may be NULL) is remembered.
 * Returns how many runner_seq values it skipped (0 without a gap). */
uint64_t runner_run_advance(struct hub *ctx, struct runner_run *run, uint64_t seq,
                            const struct keyset_fp *fp);

/* Writes RUN's mark to the store now when it moved (runner_run_advance
 * also does every 1024 frames).  Best effort: a failure is logged and
 * retried at the next write. */
void runner_run_persist(struct hub *ctx, struct runner_run *run);

/* Prometheus text: enrollments by kind. */
void runner_runs_write_metrics(const struct runner_runs *runs, FILE *out);

#endif
