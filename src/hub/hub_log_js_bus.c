/* hub_log_js_bus: the bus of a cluster, written in order and never dropped
 * for a failed publish.
 *
 * Every node publishes its bus events to the one subject agenthub.bus of
 * the AGENTHUB_BUS stream.  A node's events wait in its outbox and go out
 * in batches, one batch in flight at a time: the next batch is made only
 * once JetStream has acknowledged the one before.  A batch that fails (no
 * answer in time, a leader election, a lost connection) is sent again
 * with the same bytes and the same Nats-Msg-Id until it is acknowledged:
 * if an earlier attempt was stored, JetStream answers "duplicate" and
 * stores nothing.  So a node's events are stored in the order it made
 * them, each once:
 *   - nothing of this node's can be stored after a batch that failed,
 *     because nothing else is in flight;
 *   - an acknowledgement lost after the store is a duplicate on resend;
 *   - past the duplicate window (2 minutes of failed attempts) a resend
 *     can be stored a second time, right after the first copy among this
 *     node's batches: readers drop a batch whose name (Agenthub-Batch)
 *     equals the last one they took from the same node.
 * The outbox is bounded (HUB_LOG_JS_BUS_OUTBOX_BYTES); only events beyond
 * that bound, while JetStream stays unreachable, are dropped and counted.
 *
 * A batch message's body is a run of entries (cluster_wire_bus_put).
 * Its events get bus seqs stream_seq * HUB_LOG_JS_BUS_STRIDE + index, so
 * every node numbers them alike and the seq still only grows; a message without
 * Agenthub-Batch (one event, as older nodes wrote) gets index 0. */
#include "hub/hub_log_js_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/failpoint.h"
#include "common/log.h"
#include "core/seq_index.h"

/* A batch stays well under NATS's default max_payload (1 MiB). */
#define BUS_BATCH_BYTES (512u * 1024u)
#define BUS_RETRY_MS    50

static void bus_retry_later(struct hub_log_js *js)
{
    struct timeval tv = {0, BUS_RETRY_MS * 1000};

    if (!evtimer_pending(js->bus_out.timer, NULL))
        evtimer_add(js->bus_out.timer, &tv);
}

/* Moves entries from the outbox into a new batch: as many as fit in
 * BUS_BATCH_BYTES (at least one) and HUB_LOG_JS_BUS_STRIDE. */
static void bus_make_batch(struct hub_log_js *js)
{
    struct js_bus_out *out = &js->bus_out;
    const uint8_t *p = out->outbox.data + out->outbox.start;
    size_t have = byte_queue_length(&out->outbox), len = 0, events = 0;

    while (len < have && events < HUB_LOG_JS_BUS_STRIDE) {
        size_t entry = cluster_wire_bus_entry_size(p + len);
        if (events > 0 && len + entry > BUS_BATCH_BYTES)
            break;
        len += entry;
        events++;
    }
    out->fly = malloc(len);
    if (!out->fly) {
        bus_retry_later(js); /* memory: tried again soon */
        return;
    }
    memcpy(out->fly, p, len);
    out->fly_len = len;
    out->fly_events = events;
    out->fly_nonce = ++js->batches;
    out->fly_attempts = 0;
    byte_queue_consume(&out->outbox, len);
    out->outbox_events -= events;
}

/* Sends the batch in flight, or makes one from the outbox and sends it. */
static void bus_pump(struct hub_log_js *js)
{
    struct js_bus_out *out = &js->bus_out;

    if (out->sent)
        return;
    if (!out->fly && byte_queue_length(&out->outbox) > 0)
        bus_make_batch(js);
    if (!out->fly)
        return;
    out->fly_attempts++;
    /* Tests: the first attempt of every batch is lost before JetStream
     * stores it (a leader that stepped down, a connection cut). */
    if (out->fly_attempts == 1 && failpoint_active("cluster.bus_publish_lost")) {
        bus_retry_later(js);
        return;
    }
    if (js_link_publish_bus(js->link, out->fly_nonce,
                            failpoint_active("cluster.bus_no_msg_id") ? 0 : 1, out->fly,
                            out->fly_len) != 0) {
        bus_retry_later(js);
        return;
    }
    if (out->fly_attempts > 1)
        out->retries++;
    out->sent = 1;
    out->sent_ns = clock_monotonic_ns();
    /* The answer comes within the publish wait; the timer sends the batch
     * again should none ever come (the same id: a duplicate if stored). */
    struct timeval wait = {(time_t)(js->wait_ns / 1000000000),
                           (suseconds_t)(js->wait_ns % 1000000000 / 1000)};
    evtimer_del(out->timer);
    evtimer_add(out->timer, &wait);
}

static void bus_on_timer(evutil_socket_t fd, short what, void *arg)
{
    struct hub_log_js *js = arg;
    struct js_bus_out *out = &js->bus_out;

    if (out->sent) {
        if (clock_monotonic_ns() - out->sent_ns < js->wait_ns) {
            struct timeval later = {0, BUS_RETRY_MS * 1000};
            evtimer_add(out->timer, &later);
            return;
        }
        out->sent = 0; /* no answer at all: the same batch again */
    }
    bus_pump(js);
}

int hub_log_js_bus_init(struct hub_log_js *js)
{
    js->bus_out.timer = evtimer_new(js->base, bus_on_timer, js);
    return js->bus_out.timer ? 0 : -1;
}

void hub_log_js_bus_free(struct hub_log_js *js)
{
    if (js->bus_out.timer)
        event_free(js->bus_out.timer);
    free(js->bus_out.fly);
    byte_queue_free(&js->bus_out.outbox);
    seq_index_free(&js->bus_index);
}

uint64_t hub_log_js_publish(void *impl, const void *payload, size_t len, int64_t at_unix_ms)
{
    struct hub_log_js *js = impl;
    struct js_bus_out *out = &js->bus_out;
    uint8_t *p;

    if (len > BUS_BATCH_BYTES - CLUSTER_BUS_ENTRY_HEAD ||
        byte_queue_length(&out->outbox) + CLUSTER_BUS_ENTRY_HEAD + len >
            HUB_LOG_JS_BUS_OUTBOX_BYTES ||
        !(p = byte_queue_reserve(&out->outbox, CLUSTER_BUS_ENTRY_HEAD + len))) {
        out->lost++;
        return 0;
    }
    cluster_wire_bus_put(p, at_unix_ms, payload, len);
    out->outbox_events++;
    bus_pump(js);
    /* Its seq is the stream's: known when the consumer reads it back. */
    return 0;
}

void hub_log_js_bus_on_ack(struct hub_log_js *js, const char *batch, enum js_ack ack)
{
    struct js_bus_out *out = &js->bus_out;

    if (!out->sent || !batch || strtoull(batch, NULL, 10) != out->fly_nonce)
        return; /* an earlier attempt's answer */
    out->sent = 0;
    /* Tests: the batch is stored but its answer is lost, once per batch. */
    if (ack == JS_ACK_OK && out->ack_lost_nonce != out->fly_nonce &&
        failpoint_active("cluster.bus_ack_lost")) {
        out->ack_lost_nonce = out->fly_nonce;
        ack = JS_ACK_FAILED;
    }
    evtimer_del(out->timer);
    if (ack != JS_ACK_OK && ack != JS_ACK_DUPLICATE) {
        /* No answer in time, or refused for now: the same batch again. */
        bus_retry_later(js);
        return;
    }
    out->events += out->fly_events;
    free(out->fly);
    out->fly = NULL;
    out->fly_len = out->fly_events = 0;
    bus_pump(js);
}

void hub_log_js_bus_on_connection(struct hub_log_js *js)
{
    /* An attempt in flight when the connection dropped gets no answer:
     * send it again (a duplicate if it was stored). */
    js->bus_out.sent = 0;
    bus_pump(js);
}

/* 1 when the batch named NONCE from NODE is a second copy of the last
 * batch taken from NODE; else remembers it as NODE's last and returns 0.
 * A node's batches follow one another, so a second copy can only come
 * right after the first among that node's batches. */
static int bus_seen(struct hub_log_js *js, const char *node, uint64_t nonce)
{
    struct js_bus_origin *slot = NULL;
    char key[sizeof(js->bus_origins[0].node)];

    snprintf(key, sizeof(key), "%s", node ? node : "");
    for (size_t i = 0; i < HUB_LOG_JS_BUS_ORIGINS && !slot; i++)
        if (js->bus_origins[i].used && strcmp(js->bus_origins[i].node, key) == 0)
            slot = &js->bus_origins[i];
    if (slot && slot->last_nonce == nonce)
        return 1;
    if (!slot) {
        /* A new node: a free slot, or (more nodes than slots) the one a
         * round robin gives up. */
        slot = &js->bus_origins[js->bus_origins_next++ % HUB_LOG_JS_BUS_ORIGINS];
        slot->used = 1;
        memcpy(slot->node, key, sizeof(key));
    }
    slot->last_nonce = nonce;
    return 0;
}

/* --- the copy: local seqs in the bus ring, bus seqs in the index ---------- */

/* Takes one event into this node's copy at bus seq EXT. */
static void bus_take(struct hub_log_js *js, uint64_t ext, const void *payload, size_t len,
                     int64_t at)
{
    struct seq_index *x = &js->bus_index;
    uint64_t local;

    if (ext <= seq_index_newest(x) || ext <= x->floor)
        return; /* read again after the consumer was made anew */
    /* Appended and indexed before the watchers wake: one that reads at
     * once (the snapshot index) finds the event under its bus seq. */
    if (seq_index_reserve(x) != 0 || (local = ring_append(&js->bus->ring, payload, len, at)) == 0) {
        /* Memory is short: the event is not in the copy, and a reader
         * resuming before it is told to resync rather than skip it. */
        seq_index_raise_floor(x, ext);
        log_warn("cluster: out of memory for bus event %" PRIu64, ext);
        return;
    }
    seq_index_push(x, local, ext, ring_oldest_seq(&js->bus->ring));
    hub_log_js_demand_status(js, payload, len);
    watch_list_wake(&js->bus->watchers);
}

void hub_log_js_bus_apply(struct hub_log_js *js, const struct js_link_msg *m)
{
    struct seq_index *x = &js->bus_index;
    uint64_t base = m->stream_seq * HUB_LOG_JS_BUS_STRIDE;
    size_t at = 0, index = 0;

    /* Messages of the stream this copy never read (evicted at the source
     * before this node read them): their events are unknown here. */
    if (m->stream_seq > js->bus_applied + 1)
        seq_index_raise_floor(x, base - 1);
    if (m->stream_seq > js->bus_applied)
        js->bus_applied = m->stream_seq;
    if (!m->batch_header) {
        int64_t stamp = m->at_header ? strtoll(m->at_header, NULL, 10) : clock_unix_ms();
        bus_take(js, base, m->data, m->len, stamp);
    } else if (base > seq_index_newest(x) &&
               bus_seen(js, m->node_header, strtoull(m->batch_header, NULL, 10))) {
        js->bus_copies_dropped++;
    } else {
        const uint8_t *payload;
        size_t len;
        int64_t stamp;

        while (index < HUB_LOG_JS_BUS_STRIDE &&
               cluster_wire_bus_next(m->data, m->len, &at, &stamp, &payload, &len) == 1)
            bus_take(js, base + index++, payload, len, stamp);
        if (at != m->len)
            log_warn("cluster: bus message %" PRIu64 " is malformed after %zu events",
                     m->stream_seq, index);
    }
    hub_log_js_check_caught_up(js);
}

enum bus_status hub_log_js_bus_open(void *impl, uint64_t since_seq, uint64_t epoch,
                                    uint64_t *cursor)
{
    struct hub_log_js *js = impl;
    const struct seq_index *x = &js->bus_index;

    if (since_seq == 0) {
        *cursor = seq_index_newest(x);
        return BUS_OK;
    }
    if (js->epoch == 0 || epoch != js->epoch || since_seq < x->floor)
        return BUS_RESYNC;
    /* Past this copy's newest: seen on another node, not here yet (this
     * copy lags by the stream's delivery), and the events come. */
    *cursor = since_seq;
    return BUS_OK;
}

enum bus_status hub_log_js_bus_next(void *impl, uint64_t cursor, struct bus_event *out)
{
    struct hub_log_js *js = impl;
    const struct seq_index *x = &js->bus_index;
    uint64_t local;
    enum bus_status status;

    if (cursor < x->floor)
        return BUS_RESYNC; /* the events after it were evicted */
    local = seq_index_after(x, cursor);
    if (local == 0)
        return BUS_NONE;
    status = bus_next(js->bus, local - 1, out);
    if (status == BUS_OK)
        out->seq = seq_index_at(x, local);
    return status;
}

uint64_t hub_log_js_bus_oldest(void *impl)
{
    const struct hub_log_js *js = impl;
    const struct seq_index *x = &js->bus_index;

    /* At or above the floor (the events below it are not held). */
    return x->count ? seq_index_at(x, x->first) - 1 : hub_log_js_bus_newest(impl);
}

uint64_t hub_log_js_bus_newest(void *impl)
{
    const struct hub_log_js *js = impl;
    uint64_t newest = seq_index_newest(&js->bus_index);

    return newest > js->bus_index.floor ? newest : js->bus_index.floor;
}

void hub_log_js_bus_subscribe(void *impl, struct watcher *w)
{
    struct hub_log_js *js = impl;

    bus_watch(js->bus, w);
}

void hub_log_js_bus_unsubscribe(void *impl, struct watcher *w)
{
    struct hub_log_js *js = impl;

    bus_unwatch(js->bus, w);
}

void hub_log_js_bus_write_metrics(const struct hub_log_js *js, FILE *out)
{
    const struct js_bus_out *o = &js->bus_out;

    fprintf(out,
            "# HELP agenthub_cluster_bus_events_lost_total Bus events dropped because the "
            "outbox was full while JetStream could not be reached.\n"
            "# TYPE agenthub_cluster_bus_events_lost_total counter\n"
            "agenthub_cluster_bus_events_lost_total %" PRIu64 "\n"
            "# HELP agenthub_cluster_bus_events_published_total Bus events JetStream "
            "acknowledged.\n"
            "# TYPE agenthub_cluster_bus_events_published_total counter\n"
            "agenthub_cluster_bus_events_published_total %" PRIu64 "\n"
            "# HELP agenthub_cluster_bus_outbox_events Bus events waiting to be published.\n"
            "# TYPE agenthub_cluster_bus_outbox_events gauge\n"
            "agenthub_cluster_bus_outbox_events %zu\n"
            "# HELP agenthub_cluster_bus_retries_total Bus batches sent again after no answer.\n"
            "# TYPE agenthub_cluster_bus_retries_total counter\n"
            "agenthub_cluster_bus_retries_total %" PRIu64 "\n"
            "# HELP agenthub_cluster_bus_copies_dropped_total Bus batches readers did not take "
            "because they were a second copy.\n"
            "# TYPE agenthub_cluster_bus_copies_dropped_total counter\n"
            "agenthub_cluster_bus_copies_dropped_total %" PRIu64 "\n",
            o->lost, o->events, o->outbox_events + o->fly_events, o->retries,
            js->bus_copies_dropped);
}
