/* runner_seq: see runner_seq.h. */
#include "hub/runner_seq.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "hub/runner_control.h"
#include "store/store.h"

/* Write the mark to the store at least this often (frames). */
#define SEQ_PERSIST_EVERY 1024

struct runner_run {
    char id[STORE_ID_MAX];
    uint64_t number;     /* bumped by every plain Enroll */
    uint64_t generation; /* the log's count of this Runner's new runs */
    uint64_t last;       /* the high-water mark of this run */
    uint64_t persisted;
    uint64_t unpersisted; /* frames since the last write */
    struct keyset keys;   /* across runs */
    struct runner_run *next;
};

struct runner_runs {
    struct runner_run *list;
    uint64_t enrolled_new;
    uint64_t enrolled_resumed;
    uint64_t keys_unremembered; /* memory was short */
};

struct runner_runs *runner_runs_new(void)
{
    return calloc(1, sizeof(struct runner_runs));
}

void runner_runs_free(struct runner_runs *runs)
{
    if (!runs)
        return;
    while (runs->list) {
        struct runner_run *run = runs->list;
        runs->list = run->next;
        keyset_clear(&run->keys);
        free(run);
    }
    free(runs);
}

void runner_run_sync(struct hub *ctx, struct runner_run *run)
{
    uint64_t generation, mark = hub_log_runner_mark(&ctx->log, run->id, &generation);

    if (generation != run->generation) {
        /* The Runner began a new run through another node: this node's
         * streams of the old one are stale. */
        run->generation = generation;
        run->number++;
        run->last = mark;
    } else if (mark > run->last) {
        run->last = mark;
    }
}

/* 1 when the session log keeps Runners' marks itself (a cluster's: every
 * node writes them, so the store's copy would be whichever node wrote
 * last, maybe of an older run). */
static int log_keeps_marks(const struct hub *ctx)
{
    return ctx->log.ops->runner_sync != NULL;
}

int runner_run_get(struct hub *ctx, const char *runner_id, struct runner_run **out)
{
    struct runner_runs *runs = runner_registry_runs(ctx->runners);
    struct runner_run *run;
    uint64_t stored = 0;

    for (run = runs->list; run; run = run->next)
        if (strcmp(run->id, runner_id) == 0) {
            runner_run_sync(ctx, run);
            *out = run;
            return 0;
        }
    if (!log_keeps_marks(ctx) &&
        store_runner_seq_get(ctx->store, runner_id, &stored) == STORE_FAULT)
        return -1;
    run = calloc(1, sizeof(*run));
    if (!run)
        return -1;
    snprintf(run->id, sizeof(run->id), "%s", runner_id);
    run->last = run->persisted = stored;
    hub_log_runner_mark(&ctx->log, run->id, &run->generation);
    runner_run_sync(ctx, run);
    run->next = runs->list;
    runs->list = run;
    *out = run;
    return 0;
}

enum runner_enroll runner_run_enroll(struct hub *ctx, const char *runner_id, int resume,
                                     uint64_t *last, struct hub_log_wait *w)
{
    struct runner_runs *runs = runner_registry_runs(ctx->runners);
    struct runner_run *run;

    if (runner_run_get(ctx, runner_id, &run) != 0)
        return RUNNER_ENROLL_FAULT;
    if (log_keeps_marks(ctx)) {
        /* The mark is the log's, read once this node's copy holds
         * everything written for the Runner before now: another node's
         * new run of it, frames other nodes stored.  Never this node's
         * own count, which includes frames it took and has not stored. */
        if (resume) {
            runs->enrolled_resumed++;
        } else {
            runs->enrolled_new++;
            hub_log_runner_reset(&ctx->log, runner_id);
            runner_run_sync(ctx, run);
        }
        hub_log_runner_sync(&ctx->log, runner_id, w);
        return RUNNER_ENROLL_WAIT;
    }
    if (resume) {
        runs->enrolled_resumed++;
        *last = run->last;
        return RUNNER_ENROLL_DONE;
    }
    /* Stored first: a server restart must not resume this Runner from the
     * mark of a run it has left. */
    if (run->persisted != 0 && store_runner_seq_set(ctx->store, runner_id, 0) != STORE_OK)
        return RUNNER_ENROLL_FAULT;
    runs->enrolled_new++;
    hub_log_runner_reset(&ctx->log, runner_id);
    hub_log_runner_mark(&ctx->log, runner_id, &run->generation);
    run->number++;
    run->last = run->persisted = run->unpersisted = 0;
    *last = 0;
    return RUNNER_ENROLL_DONE;
}

uint64_t runner_run_enrolled(struct hub *ctx, struct runner_run *run)
{
    uint64_t generation;

    runner_run_sync(ctx, run);
    return hub_log_runner_mark(&ctx->log, run->id, &generation);
}

uint64_t runner_run_number(const struct runner_run *run)
{
    return run->number;
}

enum runner_frame runner_run_check(const struct runner_run *run, uint64_t seq,
                                   const struct keyset_fp *fp)
{
    if (seq <= run->last)
        return RUNNER_FRAME_RETRY;
    if (fp && keyset_contains(&run->keys, *fp))
        return RUNNER_FRAME_DUPLICATE;
    return RUNNER_FRAME_NEW;
}

uint64_t runner_run_advance(struct hub *ctx, struct runner_run *run, uint64_t seq,
                            const struct keyset_fp *fp)
{
    uint64_t skipped = seq > run->last + 1 ? seq - run->last - 1 : 0;

    if (fp && keyset_add(&run->keys, *fp) != 0) {
        struct runner_runs *runs = runner_registry_runs(ctx->runners);
        if (runs->keys_unremembered++ % 1000 == 0)
            log_warn("runner %s: out of memory remembering idempotency keys", run->id);
    }
    run->last = seq;
    if (++run->unpersisted >= SEQ_PERSIST_EVERY)
        runner_run_persist(ctx, run);
    return skipped;
}

void runner_run_persist(struct hub *ctx, struct runner_run *run)
{
    run->unpersisted = 0;
    if (run->last == run->persisted || log_keeps_marks(ctx))
        return;
    if (store_runner_seq_set(ctx->store, run->id, run->last) == STORE_OK)
        run->persisted = run->last;
    else
        log_warn("runner %s: cannot persist runner_seq %llu yet", run->id,
                 (unsigned long long)run->last);
}

void runner_runs_write_metrics(const struct runner_runs *runs, FILE *out)
{
    fprintf(out,
            "# HELP agenthub_runner_enrollments_total Enroll calls, by whether they started "
            "a new run of the Runner or resumed the one the server knew.\n"
            "# TYPE agenthub_runner_enrollments_total counter\n"
            "agenthub_runner_enrollments_total{kind=\"new\"} %llu\n"
            "agenthub_runner_enrollments_total{kind=\"resumed\"} %llu\n",
            (unsigned long long)runs->enrolled_new, (unsigned long long)runs->enrolled_resumed);
}
