#include "hub/hub_log_jetstream.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cluster/js_link.h"
#include "common/clock.h"
#include "common/log.h"
#include "hub/cluster_wire.h"
#include "hub/runner_marks.h"
#include "store/store.h"

#include "hub/hub_log_js_internal.h"

/* The entry for SUBJECT (made with ID when CREATE).  NULL when absent or
 * memory is short. */
struct js_session *hub_log_js_session_get(struct hub_log_js *js, const char *subject,
                                          const char *id, int create)
{
    struct hash_map_node *node = hash_map_find(&js->by_subject, subject, strlen(subject));
    struct js_session *e;

    if (node)
        return hash_map_entry(node, struct js_session, by_subject);
    if (!create)
        return NULL;
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    snprintf(e->subject, sizeof(e->subject), "%s", subject);
    snprintf(e->id, sizeof(e->id), "%s", id);
    list_init(&e->waits);
    list_init(&e->readers);
    if (hash_map_insert(&js->by_subject, &e->by_subject, e->subject, strlen(e->subject)) !=
        HASH_MAP_OK) {
        free(e);
        return NULL;
    }
    list_insert_tail(&js->sessions, &e->link);
    return e;
}

void hub_log_js_entries_free(struct js_entry *e)
{
    while (e) {
        struct js_entry *next = e->next;
        free(e);
        e = next;
    }
}

static void on_connection(void *arg, int up)
{
    struct hub_log_js *js = arg;

    js->connected = up;
    if (up) {
        log_info("cluster: connected to NATS");
        hub_log_js_state_changed(js);
        hub_log_js_bus_on_connection(js);
        return;
    }
    log_warn("cluster: NATS unreachable; appends answer UNAVAILABLE until it is back");
    /* Panes end where they are (compass_stream.c), so their clients resume
     * on a node that still reaches JetStream. */
    for (struct session *s = session_first(js->reg); s; s = session_next(s))
        watch_list_wake(&s->watchers);
    for (struct js_session *e = hub_log_js_session_first(js); e; e = hub_log_js_session_next(js, e))
        hub_log_js_waits_fail(js, e, 0);
    hub_log_js_state_changed(js);
}

/* --- producers waiting for their frames (hub_log_js_wait.c does the rest) ---- */

static void js_track(void *impl, struct session *s, struct hub_log_wait *w, uint64_t seq)
{
    struct hub_log_js *js = impl;

    if (w->first_ord == 0) {
        w->first_ord = js->last_ord;
        w->first_seq = seq;
    }
    w->last_ord = js->last_ord;
    w->last_seq = seq;
}

static int js_stored(void *impl, struct session *s, struct hub_log_wait *w)
{
    return w->last_ord == 0; /* nothing taken: nothing to wait for */
}

static void js_wait(void *impl, struct session *s, struct hub_log_wait *w)
{
    struct hub_log_js *js = impl;
    char subject[SUBJECT_MAX];
    struct js_session *e;

    cluster_wire_subject(session_id(s), 0, subject);
    e = hub_log_js_session_get(js, subject, NULL, 0);
    if (!e || !js->connected) {
        if (e)
            hub_log_js_withdraw(e, w);
        js->waits_failed++;
        w->done(w, 0);
        return;
    }
    hub_log_js_waits_hold(js, e, w);
}

/* --- Runners' marks and the node's state ---------------------------------------- */

int hub_log_js_writable(void *impl)
{
    struct hub_log_js *js = impl;

    return js->connected && js->caught_up;
}

void hub_log_js_state_changed(struct hub_log_js *js)
{
    int writable = hub_log_js_writable(js);

    if (writable == js->was_writable)
        return;
    js->was_writable = writable;
    if (js->state_fn)
        js->state_fn(js->state_arg);
}

const char *hub_log_js_waiting_for(const struct hub_log_js *js, char *buf, size_t len)
{
    if (!js->connected)
        snprintf(buf, len, "the session log is unreachable (JetStream)");
    else if (!js->got_ready)
        snprintf(buf, len, "the session log is unreachable (JetStream): setting up the streams");
    else if (!js->caught_up)
        snprintf(buf, len,
                 "the session log is unreachable (JetStream): catching up, frames %" PRIu64
                 " of %" PRIu64 ", bus %" PRIu64 " of %" PRIu64,
                 js->frames_applied, js->frames_target, js->bus_applied, js->bus_target);
    else
        snprintf(buf, len, "the session log takes appends");
    return buf;
}

void hub_log_js_on_state(struct hub_log_js *js, hub_log_js_state_fn fn, void *arg)
{
    js->state_fn = fn;
    js->state_arg = arg;
    js->was_writable = hub_log_js_writable(js);
}

static uint32_t js_origin(void *impl, const struct hub_log_origin *o)
{
    struct hub_log_js *js = impl;
    const char *id = o ? (o->runner_id ? o->runner_id : o->key) : NULL;
    size_t len = o ? (o->runner_id ? strlen(o->runner_id) : o->key_len) : 0;
    uint32_t taken = js->origin_parts;
    uint64_t generation;

    js->origin_kind = CLUSTER_ORIGIN_NONE;
    js->origin_parts = 0;
    js->origin_seq = 0;
    if (!id || len > CLUSTER_ORIGIN_ID_MAX)
        return taken;
    js->origin_kind = o->runner_id ? CLUSTER_ORIGIN_RUNNER : CLUSTER_ORIGIN_KEY;
    memcpy(js->origin, id, len);
    js->origin_len = len;
    js->origin_seq = o->runner_id ? o->runner_seq : 0;
    js->origin_nonce = 0;
    if (o->runner_id)
        runner_marks_get(js->marks, o->runner_id, &generation, &js->origin_nonce);
    return taken;
}

static uint64_t js_runner_mark(void *impl, const char *runner_id, uint64_t *generation)
{
    struct hub_log_js *js = impl;

    return runner_marks_get(js->marks, runner_id, generation, NULL);
}

static void js_derive(void *impl, int on)
{
    struct hub_log_js *js = impl;

    js->origin_derived = on;
}

static int js_recall(void *impl, struct session *s, const char *key, size_t len,
                     uint64_t *first_seq, uint64_t *last_seq)
{
    struct hub_log_js *js = impl;
    char subject[SUBJECT_MAX];
    const struct js_session *e;

    cluster_wire_subject(session_id(s), 0, subject);
    e = hub_log_js_session_get(js, subject, NULL, 0);
    return e && hub_log_js_key_recall(e, hub_log_js_key_fp((const uint8_t *)key, len), first_seq,
                                      last_seq);
}

static void js_write_metrics(void *impl, FILE *out)
{
    struct hub_log_js *js = impl;
    struct js_link_stats st;
    uint64_t waiting = 0, in_flight = 0, retrying = 0, read_now = 0;

    js_link_stats(js->link, &st);
    for (const struct js_session *e = hub_log_js_session_first(js); e;
         e = hub_log_js_session_next(js, e)) {
        waiting += e->out_frames + e->fly_frames;
        in_flight += e->in_flight;
        retrying += e->retry;
        read_now += e->demand != DEMAND_NONE;
    }
    fprintf(out,
            "# HELP agenthub_cluster_frames_waiting Frames taken and not yet acknowledged by "
            "JetStream.\n"
            "# TYPE agenthub_cluster_frames_waiting gauge\n"
            "agenthub_cluster_frames_waiting %llu\n"
            "# TYPE agenthub_cluster_batches_in_flight gauge\n"
            "agenthub_cluster_batches_in_flight %llu\n"
            "# TYPE agenthub_cluster_sessions_retrying gauge\n"
            "agenthub_cluster_sessions_retrying %llu\n",
            (unsigned long long)waiting, (unsigned long long)in_flight,
            (unsigned long long)retrying);
    fprintf(out,
            "# HELP agenthub_cluster_connected 1 while this node reaches NATS JetStream.\n"
            "# TYPE agenthub_cluster_connected gauge\n"
            "agenthub_cluster_connected %d\n"
            "# HELP agenthub_cluster_caught_up 1 once this node's copies replayed the streams.\n"
            "# TYPE agenthub_cluster_caught_up gauge\n"
            "agenthub_cluster_caught_up %d\n"
            "# TYPE agenthub_cluster_disconnects_total counter\n"
            "agenthub_cluster_disconnects_total %llu\n"
            "# TYPE agenthub_cluster_publishes_total counter\n"
            "agenthub_cluster_publishes_total %llu\n"
            "# HELP agenthub_cluster_publish_seconds Frames batches from publish to "
            "JetStream's ack.\n"
            "# TYPE agenthub_cluster_publish_seconds summary\n"
            "agenthub_cluster_publish_seconds_sum %.6f\n"
            "agenthub_cluster_publish_seconds_count %llu\n"
            "# TYPE agenthub_cluster_publish_seconds_max gauge\n"
            "agenthub_cluster_publish_seconds_max %.6f\n"
            "# HELP agenthub_cluster_writer_changes_total Batches refused because another "
            "node wrote the session first (its writer changed), published again after.\n"
            "# TYPE agenthub_cluster_writer_changes_total counter\n"
            "agenthub_cluster_writer_changes_total %llu\n"
            "# HELP agenthub_cluster_publish_retries_total Batches sent again after JetStream "
            "did not answer in time.\n"
            "# TYPE agenthub_cluster_publish_retries_total counter\n"
            "agenthub_cluster_publish_retries_total %llu\n"
            "# TYPE agenthub_cluster_apply_gaps_total counter\n"
            "agenthub_cluster_apply_gaps_total %llu\n"
            "# HELP agenthub_cluster_appends_unstored_total Producer calls answered UNAVAILABLE "
            "because JetStream did not store their frames in time.\n"
            "# TYPE agenthub_cluster_appends_unstored_total counter\n"
            "agenthub_cluster_appends_unstored_total %llu\n"
            "# HELP agenthub_cluster_copies_dropped_total Entries readers did not take because "
            "the log held them already (a Runner frame sent again, a keyed call retried, a "
            "batch stored twice).\n"
            "# TYPE agenthub_cluster_copies_dropped_total counter\n"
            "agenthub_cluster_copies_dropped_total %llu\n"
            "# HELP agenthub_cluster_renumbered_total Batches whose writer's seq readers "
            "corrected (it wrote after a stale view of the session).\n"
            "# TYPE agenthub_cluster_renumbered_total counter\n"
            "agenthub_cluster_renumbered_total %llu\n"
            "# HELP agenthub_cluster_heads_applied_total Subjects this node wrote after the "
            "heads stream's copy of their newest message (the frames stream evicted them).\n"
            "# TYPE agenthub_cluster_heads_applied_total counter\n"
            "agenthub_cluster_heads_applied_total %llu\n",
            js->connected, js->caught_up, (unsigned long long)st.disconnects,
            (unsigned long long)st.publishes, (double)js->publish_ns_sum / 1e9,
            (unsigned long long)js->publish_acks, (double)js->publish_ns_max / 1e9,
            (unsigned long long)js->writer_changes, (unsigned long long)js->publish_retries,
            (unsigned long long)js->apply_gaps, (unsigned long long)js->waits_failed,
            (unsigned long long)js->copies_dropped, (unsigned long long)js->renumbered,
            (unsigned long long)js->heads_applied);
    fprintf(out,
            "# HELP agenthub_cluster_session_messages_total Messages of sessions' subjects "
            "this node's consumers delivered (Runners' subjects not counted), and their "
            "bytes.\n"
            "# TYPE agenthub_cluster_session_messages_total counter\n"
            "agenthub_cluster_session_messages_total %llu\n"
            "# TYPE agenthub_cluster_session_message_bytes_total counter\n"
            "agenthub_cluster_session_message_bytes_total %llu\n"
            "# HELP agenthub_cluster_sessions_read Sessions this node reads now (with "
            "--cluster-read on-demand; 0 when it reads every session).\n"
            "# TYPE agenthub_cluster_sessions_read gauge\n"
            "agenthub_cluster_sessions_read %llu\n"
            "# TYPE agenthub_cluster_session_reads_started_total counter\n"
            "agenthub_cluster_session_reads_started_total %llu\n"
            "# TYPE agenthub_cluster_session_reads_ended_total counter\n"
            "agenthub_cluster_session_reads_ended_total %llu\n",
            (unsigned long long)js->frames_messages, (unsigned long long)js->frames_bytes,
            (unsigned long long)read_now, (unsigned long long)js->watches_opened,
            (unsigned long long)js->watches_closed);
    hub_log_js_bus_write_metrics(js, out);
}

static const struct hub_log_ops js_ops = {
    .append = hub_log_js_append,
    .read = hub_log_ring_read,
    .check = hub_log_ring_check,
    .mark = hub_log_js_mark,
    .tail = hub_log_ring_tail,
    .span = hub_log_ring_span,
    .publish = hub_log_js_publish,
    .open = hub_log_js_bus_open,
    .next = hub_log_js_bus_next,
    .subscribe = hub_log_js_bus_subscribe,
    .unsubscribe = hub_log_js_bus_unsubscribe,
    .epoch = hub_log_js_epoch,
    .bus_oldest = hub_log_js_bus_oldest,
    .bus_newest = hub_log_js_bus_newest,
    .origin = js_origin,
    .runner_mark = js_runner_mark,
    .runner_reset = hub_log_js_runner_reset,
    .runner_dealt = hub_log_js_runner_dealt,
    .runner_sync = hub_log_js_runner_sync,
    .derive = js_derive,
    .recall = js_recall,
    .track = js_track,
    .stored = js_stored,
    .wait = js_wait,
    .writable = hub_log_js_writable,
    .write_metrics = js_write_metrics,
    .prepare = hub_log_js_prepare,
    .reads = hub_log_js_reads,
};

struct hub_log_js *hub_log_jetstream(struct hub_log *log, struct event_base *base,
                                     struct session_registry *reg, struct bus *bus,
                                     const struct hub_log_js_config *config, char *err,
                                     size_t errlen)
{
    static const struct js_link_events events = {
        .ready = hub_log_js_on_ready,
        .frames = hub_log_js_on_frames,
        .bus = hub_log_js_on_bus,
        .ack = hub_log_js_on_ack,
        .connection = on_connection,
        .watched = hub_log_js_on_watched,
    };
    struct js_link_config lc = {
        .urls = config->urls,
        .node_id = config->node_id,
        .replicas = config->replicas,
        .frames_max_bytes = config->frames_max_bytes,
        .bus_max_bytes = config->bus_max_bytes,
        .publish_wait_ms = config->publish_wait_ms,
        .on_demand = config->on_demand,
    };
    struct hub_log_js *js = calloc(1, sizeof(*js));

    if (!js) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    hash_map_init(&js->by_subject);
    list_init(&js->sessions);
    js->base = base;
    js->reg = reg;
    js->bus = bus;
    if (getrandom(&js->batches, sizeof(js->batches), 0) != (ssize_t)sizeof(js->batches))
        js->batches = clock_monotonic_ns() ^ ((uint64_t)clock_unix_ms() << 20);
    js->batches &= ~(uint64_t)0 >> 1; /* room to count up */
    js->retry_timer = evtimer_new(base, hub_log_js_on_retry, js);
    js->watch_timer = evtimer_new(base, hub_log_js_on_watch, js);
    js->wait_timer = evtimer_new(base, hub_log_js_waits_timer, js);
    js->hold_timer = evtimer_new(base, hub_log_js_on_hold, js);
    /* An ack that does not come in time fails the waits at once; this
     * bounds the other ways a batch can stall (sent again and again while
     * the link cannot publish, waiting for a silent consumer). */
    js->wait_ns = ((uint64_t)config->publish_wait_ms * 2 + 1000) * 1000000;
    js->marks = runner_marks_new();
    js->on_demand = config->on_demand;
    if (hub_log_js_demand_init(js, config->linger_ms) != 0 || hub_log_js_bus_init(js) != 0 ||
        !js->retry_timer || !js->watch_timer || !js->wait_timer || !js->hold_timer || !js->marks) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    js->link = js_link_new(base, &lc, &events, js, err, errlen);
    if (!js->link)
        goto fail;
    js->connected = js_link_connected(js->link);
    log->ops = &js_ops;
    log->impl = js;
    return js;
fail:
    if (js->retry_timer)
        event_free(js->retry_timer);
    if (js->watch_timer)
        event_free(js->watch_timer);
    if (js->wait_timer)
        event_free(js->wait_timer);
    if (js->hold_timer)
        event_free(js->hold_timer);
    hub_log_js_demand_free(js);
    hub_log_js_bus_free(js);
    runner_marks_free(js->marks);
    free(js);
    return NULL;
}

void hub_log_js_free(struct hub_log_js *js)
{
    if (!js)
        return;
    js_link_free(js->link);
    event_free(js->retry_timer);
    event_free(js->watch_timer);
    event_free(js->wait_timer);
    event_free(js->hold_timer);
    hub_log_js_demand_free(js);
    hub_log_js_held_free(js);
    hub_log_js_bus_free(js);
    runner_marks_free(js->marks);
    for (struct js_session *e = hub_log_js_session_first(js), *next; e; e = next) {
        next = hub_log_js_session_next(js, e);
        /* Their calls are gone (the server closes them first); a wait left
         * behind is only let go, never answered. */
        while (!list_is_empty(&e->waits))
            hub_log_wait_cancel(hub_log_wait_of(list_first(&e->waits)));
        while (!list_is_empty(&e->readers))
            hub_log_wait_cancel(hub_log_wait_of(list_first(&e->readers)));
        hub_log_js_entries_free(e->out_head);
        free(e->keys);
        hub_log_js_entries_free(e->fly);
        free(e->fly_buf);
        free(e);
    }
    hash_map_free(&js->by_subject);
    free(js);
}

struct js_link *hub_log_js_link(const struct hub_log_js *js)
{
    return js->link;
}
