/* hub_log_disk_writer: the durable backend's batches and its committing
 * thread.  The event loop takes operations into the pending batch; a
 * timer (the end of the loop turn, or --log-commit-ms) hands it to the
 * thread when the thread is idle, else it keeps gathering.  The thread
 * commits one batch at a time and tells the loop through a pipe; the loop
 * then applies the batch to the core structures, answers the producers
 * waiting for it and hands over the next.  A refused batch stays the
 * thread's next one, tried again every DSK_RETRY_MS. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "hub/hub_log_disk_internal.h"

void hub_log_disk_batch_clear(struct dsk_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free((void *)b->ops[i].op.data);
    for (uint32_t i = 0; i < b->nrows; i++)
        free(b->rows[i].blob);
    free(b->rows);
    free(b->events.blob);
    free(b->ops);
    free(b->flat);
    memset(b, 0, sizeof(*b));
}

static void flush_arm(struct hub_log_disk *d)
{
    uint32_t ms = d->config.commit_ms;

    if (d->flush_armed || !d->flush_timer)
        return;
    d->flush_armed = 1;
    event_add(d->flush_timer, &(struct timeval){ms / 1000, (ms % 1000) * 1000});
}

/* Keeps ROW's blob for a later row (or frees it). */
static void spare_put(struct hub_log_disk *d, struct dsk_row *row)
{
    if (row->blob && d->nspare < DSK_SPARE_ROWS && d->spare_bytes + row->cap <= DSK_SPARE_BYTES) {
        d->spare[d->nspare++] = (struct dsk_spare){row->blob, row->cap};
        d->spare_bytes += row->cap;
    } else {
        free(row->blob);
    }
    row->blob = NULL;
    row->cap = 0;
}

/* Gives a new ROW a kept blob, if there is one. */
static void spare_get(struct hub_log_disk *d, struct dsk_row *row)
{
    if (d->nspare == 0)
        return;
    d->nspare--;
    row->blob = d->spare[d->nspare].blob;
    row->cap = d->spare[d->nspare].cap;
    d->spare_bytes -= row->cap;
}

/* Clears committed batch B: its rows' blobs and its arrays are kept for
 * later batches. */
static void batch_recycle(struct hub_log_disk *d, struct dsk_batch *b)
{
    for (uint32_t i = 0; i < b->nrows; i++)
        spare_put(d, &b->rows[i]);
    spare_put(d, &b->events);
    b->nrows = 0;
    if (!d->spare_ops) {
        for (size_t i = 0; i < b->n; i++)
            free((void *)b->ops[i].op.data);
        d->spare_ops = b->ops;
        d->spare_ops_cap = b->cap;
        b->ops = NULL;
        b->n = 0;
    }
    if (!d->spare_rows) {
        d->spare_rows = b->rows;
        d->spare_rows_cap = b->rows_cap;
        b->rows = NULL;
    }
    hub_log_disk_batch_clear(b);
}

/* The pending batch, just emptied, takes the arrays a committed one left. */
static void batch_reuse(struct hub_log_disk *d, struct dsk_batch *b)
{
    if (d->spare_ops) {
        b->ops = d->spare_ops;
        b->cap = d->spare_ops_cap;
        d->spare_ops = NULL;
    }
    if (d->spare_rows) {
        b->rows = d->spare_rows;
        b->rows_cap = d->spare_rows_cap;
        d->spare_rows = NULL;
    }
}

void hub_log_disk_spares_free(struct hub_log_disk *d)
{
    while (d->nspare > 0)
        free(d->spare[--d->nspare].blob);
    d->spare_bytes = 0;
    free(d->spare_ops);
    free(d->spare_rows);
    d->spare_ops = NULL;
    d->spare_rows = NULL;
}

/* E's row in the pending batch, made when it has none or its row is full
 * (DSK_ROW_BYTES: a reader of older frames reads a row whole).  Returns
 * its index, or UINT32_MAX when memory is short. */
static uint32_t row_of(struct hub_log_disk *d, struct dsk_session *e)
{
    struct dsk_batch *b = &d->pending;
    struct dsk_row *row;

    if (e->row_batch == b->id && e->row < b->nrows && b->rows[e->row].session == e &&
        b->rows[e->row].len < DSK_ROW_BYTES)
        return e->row;
    if (b->nrows == b->rows_cap) {
        uint32_t cap = b->rows_cap ? b->rows_cap * 2 : 16;
        struct dsk_row *more = realloc(b->rows, cap * sizeof(*more));
        if (!more)
            return UINT32_MAX;
        b->rows = more;
        b->rows_cap = cap;
    }
    row = &b->rows[b->nrows];
    memset(row, 0, sizeof(*row));
    spare_get(d, row);
    row->session = e;
    e->row_batch = b->id;
    e->row = b->nrows;
    return b->nrows++;
}

/* Appends a record to ROW: an entry of KIND (events: a bus event) at SEQ
 * with LEN bytes of DATA.  Returns the offset of its bytes in the row's
 * blob, or SIZE_MAX when memory is short (nothing appended). */
static size_t row_put(struct dsk_row *row, int events, uint8_t kind, uint64_t seq, int64_t at,
                      const void *data, size_t len)
{
    size_t need = row->len + LOGDB_HEADER_MAX + len;

    if (need > row->cap || !row->blob) {
        size_t cap = row->cap ? row->cap * 2 : 1024;
        uint8_t *more;
        while (cap < need)
            cap *= 2;
        if (!(more = realloc(row->blob, cap)))
            return SIZE_MAX;
        row->blob = more;
        row->cap = cap;
    }
    row->len += events ? logdb_event_header(row->blob + row->len, seq, at, len)
                       : logdb_entry_header(row->blob + row->len, kind, seq, at, len);
    if (len)
        memcpy(row->blob + row->len, data, len);
    if (row->n++ == 0)
        row->first_seq = seq;
    row->last_seq = seq;
    if (kind != DSK_KIND_FRAME && row->marks++ == 0)
        row->mark_seq = seq;
    row->len += len;
    return row->len - len;
}

struct dsk_op *hub_log_disk_take(struct hub_log_disk *d, uint8_t op, struct dsk_session *e,
                                 uint8_t kind, uint64_t seq, int64_t at, const void *data,
                                 size_t len)
{
    struct dsk_batch *b = &d->pending;
    struct dsk_op *o;
    void *copy = NULL;
    uint32_t part = 0;
    size_t where = 0;

    if (b->id == 0)
        b->id = ++d->batches;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        struct dsk_op *ops = realloc(b->ops, cap * sizeof(*ops));
        if (!ops)
            return NULL;
        b->ops = ops;
        b->cap = cap;
    }
    /* An entry's and a bus event's bytes go straight into their row;
     * anything else that has bytes keeps a copy of them. */
    if (op == LOGDB_OP_ENTRY) {
        if (!e || (part = row_of(d, e)) == UINT32_MAX ||
            (where = row_put(&b->rows[part], 0, kind, seq, at, data, len)) == SIZE_MAX)
            return NULL;
    } else if (op == LOGDB_OP_BUS) {
        if (b->events.n == 0 && !b->events.blob)
            spare_get(d, &b->events);
        if ((where = row_put(&b->events, 1, 0, seq, at, data, len)) == SIZE_MAX)
            return NULL;
    } else if (len) {
        if (!(copy = malloc(len)))
            return NULL;
        memcpy(copy, data, len);
    }
    o = &b->ops[b->n++];
    memset(o, 0, sizeof(*o));
    o->op.op = op;
    o->op.kind = kind;
    o->op.sid = e ? e->sid : 0;
    o->op.seq = seq;
    o->op.at_unix_ms = at;
    o->op.data = copy;
    o->op.len = len;
    o->part = part;
    o->at = where;
    o->session = e;
    if (e)
        e->pending++;
    o->ord = ++d->ord;
    b->bytes += len + sizeof(*o);
    if (op == LOGDB_OP_ENTRY && kind == DSK_KIND_FRAME)
        b->frames++;
    flush_arm(d);
    return o;
}

/* What the thread writes: the operations other than entries and bus
 * events in order, then a row for each session's entries and one for the
 * bus's events, then each Runner's mark in this batch's run (the highest
 * runner_seq of its frames in it), so the mark is never ahead of the
 * frames committed with it.  One transaction holds them all, so their
 * order within it changes nothing a reader can see.  Returns 0, or -1 when
 * memory is short. */
static int flatten(struct dsk_batch *b)
{
    struct logdb_op *flat = malloc((2 * b->n + b->nrows + 1) * sizeof(*flat));
    size_t n = 0;

    if (!flat)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        struct dsk_op *o = &b->ops[i];
        struct dsk_runner *r = o->runner;
        if (o->op.op != DSK_OP_DEALT && o->op.op != LOGDB_OP_ENTRY && o->op.op != LOGDB_OP_BUS)
            flat[n++] = o->op;
        if (!r || o->runner_seq == 0 || o->generation != r->generation)
            continue;
        if (!r->in_batch) {
            r->in_batch = 1;
            r->batch_mark = r->mark;
        }
        if (o->runner_seq > r->batch_mark)
            r->batch_mark = o->runner_seq;
    }
    for (uint32_t i = 0; i < b->nrows; i++) {
        const struct dsk_row *row = &b->rows[i];
        if (row->n == 0)
            continue; /* made, then memory was short for its first record */
        flat[n++] = (struct logdb_op){
            .op = LOGDB_OP_ENTRIES,
            .sid = row->session->sid,
            .seq = row->first_seq,
            .aux = row->last_seq,
            .marks = row->marks,
            .mark_seq = row->mark_seq,
            .data = row->blob,
            .len = row->len,
        };
    }
    if (b->events.n)
        flat[n++] = (struct logdb_op){
            .op = LOGDB_OP_EVENTS,
            .seq = b->events.first_seq,
            .aux = b->events.last_seq,
            .data = b->events.blob,
            .len = b->events.len,
        };
    for (size_t i = 0; i < b->n; i++) {
        struct dsk_runner *r = b->ops[i].runner;
        if (!r || !r->in_batch)
            continue;
        r->in_batch = 0;
        flat[n++] = (struct logdb_op){
            .op = LOGDB_OP_RUNNER,
            .seq = r->generation,
            .aux = r->batch_mark,
            .data = r->id,
            .len = r->len,
        };
    }
    b->flat = flat;
    b->nflat = n;
    return 0;
}

static void submit(struct hub_log_disk *d, struct dsk_batch *b)
{
    pthread_mutex_lock(&d->mu);
    d->job = b;
    d->job_done = 0;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* Hands the pending batch to the thread when it is idle and all is well. */
static void kick(struct hub_log_disk *d)
{
    struct dsk_batch *b;

    if (d->inflight || d->pending.n == 0)
        return;
    b = malloc(sizeof(*b));
    if (!b) {
        flush_arm(d);
        return;
    }
    *b = d->pending;
    if (flatten(b) != 0) {
        free(b);
        flush_arm(d);
        return;
    }
    memset(&d->pending, 0, sizeof(d->pending));
    batch_reuse(d, &d->pending);
    b->last_ord = b->ops[b->n - 1].ord;
    d->inflight = b;
    submit(d, b);
    hub_log_disk_state_changed(d);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_disk *d = arg;

    d->flush_armed = 0;
    kick(d);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_disk *d = arg;

    if (d->inflight)
        submit(d, d->inflight);
}

/* --- producers waiting ----------------------------------------------------------- */

/* Tells the waits their frames are not committed: all of them, or when NOW
 * is not 0 those past their deadline.  The frames stay taken and may still
 * be committed; the producer, told UNAVAILABLE, sends them again. */
static void waits_fail(struct hub_log_disk *d, uint64_t now)
{
    for (;;) {
        struct list_node *node = list_first(&d->waits);
        struct hub_log_wait *w;

        while (node && now && hub_log_wait_of(node)->deadline_ns > now)
            node = list_next(&d->waits, node);
        if (!(w = hub_log_wait_of(node)))
            return;
        hub_log_wait_cancel(w);
        d->waits_failed++;
        w->done(w, 0);
    }
}

/* Answers the waits whose frames are all committed.  A done callback may
 * end other calls, which take their waits back: the list is walked again
 * from its head after each. */
static void waits_stored(struct hub_log_disk *d)
{
    for (;;) {
        struct list_node *node = list_first(&d->waits);
        struct hub_log_wait *w;

        while (node && hub_log_wait_of(node)->last_ord > d->committed_ord)
            node = list_next(&d->waits, node);
        if (!(w = hub_log_wait_of(node)))
            return;
        hub_log_wait_cancel(w);
        w->done(w, 1);
    }
}

static void on_wait_timer(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_disk *d = arg;

    waits_fail(d, clock_monotonic_ns());
    if (!list_is_empty(&d->waits))
        event_add(d->wait_timer, &(struct timeval){0, 500 * 1000});
}

void hub_log_disk_track(void *impl, struct session *s, struct hub_log_wait *w, uint64_t seq)
{
    struct hub_log_disk *d = impl;

    if (w->first_ord == 0) {
        w->first_ord = d->ord;
        w->first_seq = seq;
    }
    w->last_ord = d->ord;
    w->last_seq = seq;
}

int hub_log_disk_stored(void *impl, struct session *s, struct hub_log_wait *w)
{
    struct hub_log_disk *d = impl;

    return w->last_ord <= d->committed_ord;
}

void hub_log_disk_wait(void *impl, struct session *s, struct hub_log_wait *w)
{
    struct hub_log_disk *d = impl;

    if (d->fault != LOGDB_OK) {
        d->waits_failed++;
        w->done(w, 0);
        return;
    }
    w->deadline_ns = clock_monotonic_ns() + (uint64_t)DSK_WAIT_MS * 1000000;
    list_insert_head(&d->waits, &w->link);
    if (!evtimer_pending(d->wait_timer, NULL))
        event_add(d->wait_timer, &(struct timeval){0, 500 * 1000});
}

/* --- a committed batch ------------------------------------------------------------ */

static void count_commit(struct hub_log_disk *d, uint64_t ns)
{
    static const uint64_t bounds_us[12] = {100,   250,   500,   1000,   2500,   5000,
                                           10000, 25000, 50000, 100000, 250000, 1000000};
    int i = 0;

    d->commits++;
    d->commit_ns_sum += ns;
    if (ns > d->commit_ns_max)
        d->commit_ns_max = ns;
    while (i < 12 && ns > bounds_us[i] * 1000)
        i++;
    if (i < 12)
        d->commit_buckets[i]++;
}

/* Puts B's frames in the rings and its events on the bus, in order. */
static void apply_batch(struct hub_log_disk *d, struct dsk_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        struct dsk_op *o = &b->ops[i];
        const struct logdb_op *op = &o->op;

        if (op->op == LOGDB_OP_ENTRY) {
            hub_log_disk_apply_entry(d, o->session, op->kind, op->seq,
                                     b->rows[o->part].blob + o->at, op->len, op->at_unix_ms, 0);
            if (op->kind == DSK_KIND_FRAME) {
                d->frames_committed++;
                d->bytes_committed += op->len;
            }
        } else if (op->op == LOGDB_OP_BUS) {
            if (op->seq > bus_newest_seq(d->bus) + 1)
                bus_skip_to(d->bus, op->seq);
            bus_publish(d->bus, b->events.blob + o->at, op->len, op->at_unix_ms);
            d->events_committed++;
        }
        if (o->runner && o->generation == o->runner->generation && o->runner_seq > o->runner->mark)
            o->runner->mark = o->runner_seq;
        if (o->session)
            o->session->pending--;
    }
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_disk *d = arg;
    struct dsk_batch *b = d->inflight;
    char drain[64], err[256];
    enum logdb_rc rc;
    uint64_t ns;

    while (read(fd, drain, sizeof(drain)) > 0)
        ;
    pthread_mutex_lock(&d->mu);
    if (!d->job_done) {
        pthread_mutex_unlock(&d->mu);
        return;
    }
    d->job_done = 0;
    rc = d->job_rc;
    ns = d->job_ns;
    d->fsyncs = d->job_fsyncs;
    memcpy(err, d->job_err, sizeof(err));
    pthread_mutex_unlock(&d->mu);
    if (rc != LOGDB_OK) {
        d->faults++;
        if (d->fault == LOGDB_OK)
            log_error("session log %s: cannot commit (%s: %s); appends are refused until it "
                      "can, tried again every %d ms",
                      d->path, logdb_rc_name(rc), err, DSK_RETRY_MS);
        d->fault = rc;
        snprintf(d->fault_msg, sizeof(d->fault_msg), "the session log %.200s cannot commit: %.250s",
                 d->path, err);
        waits_fail(d, 0);
        hub_log_disk_state_changed(d);
        event_add(d->retry_timer,
                  &(struct timeval){DSK_RETRY_MS / 1000, (DSK_RETRY_MS % 1000) * 1000});
        return;
    }
    count_commit(d, ns);
    if (d->fault != LOGDB_OK) {
        log_info("session log %s: commits go again", d->path);
        d->fault = LOGDB_OK;
    }
    d->inflight = NULL;
    apply_batch(d, b);
    d->committed_ord = b->last_ord;
    waits_stored(d);
    batch_recycle(d, b);
    free(b);
    hub_log_disk_state_changed(d);
    kick(d);
}

/* --- the thread -------------------------------------------------------------------- */

static void *writer_main(void *arg)
{
    struct hub_log_disk *d = arg;

    pthread_mutex_lock(&d->mu);
    for (;;) {
        struct dsk_batch *b;
        char err[256] = "";
        uint64_t t0, ns;
        enum logdb_rc rc;

        while (!d->job && !d->quit)
            pthread_cond_wait(&d->cv, &d->mu);
        if (!d->job)
            break;
        b = d->job;
        pthread_mutex_unlock(&d->mu);
        t0 = clock_monotonic_ns();
        rc = logdb_commit(d->db, b->flat, b->nflat, err, sizeof(err));
        ns = clock_monotonic_ns() - t0;
        pthread_mutex_lock(&d->mu);
        d->job = NULL;
        d->job_done = 1;
        d->job_rc = rc;
        d->job_ns = ns;
        d->job_fsyncs = logdb_fsyncs(d->db);
        memcpy(d->job_err, err, sizeof(d->job_err));
        /* A full pipe already says there is news. */
        if (write(d->pipe_fds[1], "", 1) < 0 && errno != EAGAIN)
            log_warn("session log: cannot wake the event loop: %s", strerror(errno));
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

int hub_log_disk_spawn(pthread_t *thread, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int rv;

    /* Signals are the event loop's. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rv = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rv;
}

int hub_log_disk_writer_start(struct hub_log_disk *d, char *err, size_t errlen)
{
    int rv;

    if (pipe2(d->pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    d->done_event = event_new(d->base, d->pipe_fds[0], EV_READ | EV_PERSIST, on_done, d);
    d->flush_timer = evtimer_new(d->base, on_flush, d);
    d->retry_timer = evtimer_new(d->base, on_retry, d);
    d->wait_timer = evtimer_new(d->base, on_wait_timer, d);
    if (!d->done_event || !d->flush_timer || !d->retry_timer || !d->wait_timer ||
        event_add(d->done_event, NULL) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    rv = hub_log_disk_spawn(&d->thread, writer_main, d);
    if (rv != 0) {
        snprintf(err, errlen, "cannot start the session log's thread: %s", strerror(rv));
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        return -1;
    }
    d->thread_started = 1;
    return 0;
}

/* Commits B on this thread (the writer is stopped).  Logs what could not
 * be written. */
static void commit_now(struct hub_log_disk *d, struct dsk_batch *b)
{
    char err[256];
    enum logdb_rc rc;

    if (!b->flat && flatten(b) != 0) {
        log_error("session log %s: out of memory; %u frames not written", d->path, b->frames);
        return;
    }
    rc = logdb_commit(d->db, b->flat, b->nflat, err, sizeof(err));
    if (rc != LOGDB_OK)
        log_error("session log %s: %u frames not written: %s", d->path, b->frames, err);
}

void hub_log_disk_writer_stop(struct hub_log_disk *d)
{
    int committed = 0;

    if (d->thread_started) {
        pthread_mutex_lock(&d->mu);
        d->quit = 1;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->thread, NULL);
        committed = d->job_done && d->job_rc == LOGDB_OK;
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        d->thread_started = 0;
    }
    /* What was taken and not yet committed goes now: nobody was told it
     * is stored, but a clean stop keeps it anyway. */
    if (d->inflight) {
        if (!committed && d->db)
            commit_now(d, d->inflight);
        hub_log_disk_batch_clear(d->inflight);
        free(d->inflight);
        d->inflight = NULL;
    }
    if (d->pending.n && d->db)
        commit_now(d, &d->pending);
    hub_log_disk_batch_clear(&d->pending);
    hub_log_disk_spares_free(d);
    /* Their calls are gone (the server closes them first). */
    while (!list_is_empty(&d->waits))
        hub_log_wait_cancel(hub_log_wait_of(list_first(&d->waits)));
    if (d->done_event)
        event_free(d->done_event);
    if (d->flush_timer)
        event_free(d->flush_timer);
    if (d->retry_timer)
        event_free(d->retry_timer);
    if (d->wait_timer)
        event_free(d->wait_timer);
    d->done_event = d->flush_timer = d->retry_timer = d->wait_timer = NULL;
    if (d->pipe_fds[0] >= 0) {
        close(d->pipe_fds[0]);
        close(d->pipe_fds[1]);
    }
    d->pipe_fds[0] = d->pipe_fds[1] = -1;
}
