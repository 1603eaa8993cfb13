/* hub_log_js internals shared by the JetStream backend's files:
 * hub_log_jetstream.c (the backend: state, lifecycle, metrics),
 * hub_log_js_write.c (outboxes, batches, publishes), hub_log_js_read.c
 * (the consumers filling the node's copies) and hub_log_js_wait.c
 * (producers waiting for their frames to be stored).  Not for other
 * modules: they use hub_log_jetstream.h. */
#ifndef AGENTHUB_HUB_LOG_JS_INTERNAL_H
#define AGENTHUB_HUB_LOG_JS_INTERNAL_H

#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster/js_link.h"
#include "common/byte_queue.h"
#include "common/hash_map.h"
#include "common/list.h"
#include "core/keyset.h"
#include "core/seq_index.h"
#include "core/session.h"
#include "hub/cluster_wire.h"
#include "hub/hub_log.h"
#include "store/store.h"

struct runner_marks;

/* A batch stays well under NATS's default max_payload (1 MiB). */
#define BATCH_BYTES ((size_t)512 * 1024)
#define SUBJECT_MAX CLUSTER_SUBJECT_MAX
#define WATCH_MS    2000
#define RETRY_MS    20
/* A batch refused with no other node's message after its predecessor goes
 * again after 1 ms, doubling up to this. */
#define REFUSED_MAX_MS 1000
/* Refused this many times in a row (1 + 2 + ... + 512 ms: over a second),
 * always naming a last sequence older than the predecessor, a batch
 * follows what the stream holds. */
#define PREDECESSOR_GONE_REFUSALS 11
/* Runner runs whose newest entry a session's copy remembers (one Runner
 * hosts a session at a time; a few more cover moves and new runs). */
#define ORIGINS_KEPT 4u
/* Keyed calls whose records a session's copy remembers: a producer's retry
 * within this many keyed calls of the session is recognised. */
#define KEYS_KEPT 256u
/* Batches a session's copy remembers by their Agenthub-Batch: a batch
 * stored twice (an attempt whose ack was lost, stored again) is taken once. */
#define BATCHES_KEPT 16u

struct js_entry {
    struct js_entry *next;
    uint8_t kind; /* a CLUSTER_ENTRY_* or an enum hub_log_mark */
    uint8_t olen; /* origin bytes at the front of data */
    /* A keyed call's entry whose producer was told UNAVAILABLE: dropped
     * should its batch turn out not stored (hub_log_js_withdraw). */
    uint8_t withdrawn;
    uint64_t runner_seq;
    uint64_t ord; /* its place among the entries this node took for the subject */
    int64_t at_unix_ms;
    size_t len; /* frame bytes after the origin */
    uint8_t data[];
};

/* js_session.head: the heads stream not asked yet, asked, answered. */
enum { HEAD_UNKNOWN, HEAD_ASKED, HEAD_KNOWN };

/* js_session.demand, reading on demand (hub_log_js_demand.c): not read
 * now; its consumer asked for; caught up with what the subject held, the
 * heads stream asked where it ends; current. */
enum { DEMAND_NONE, DEMAND_OPENING, DEMAND_HEAD, DEMAND_CURRENT };

/* Entries that take a seq on their subject (a Runner's subject counts its
 * entries too, though no reader numbers them). */
static inline int entry_counts(uint8_t kind)
{
    return kind == CLUSTER_ENTRY_FRAME || kind == CLUSTER_ENTRY_TAGGED ||
           kind == CLUSTER_ENTRY_RUNNER_RESET || kind == CLUSTER_ENTRY_RUNNER_DEALT ||
           kind == CLUSTER_ENTRY_RUNNER_SYNC;
}

/* The kind of P's tagged origin (a Runner's frame, a keyed call's entry),
 * parsed into *O; CLUSTER_ORIGIN_NONE for an untagged entry or a malformed
 * origin. */
static inline enum cluster_origin_kind hub_log_js_entry_origin(const struct js_entry *p,
                                                               struct cluster_wire_origin *o)
{
    if (!p || p->kind != CLUSTER_ENTRY_TAGGED || cluster_wire_origin_parse(p->data, p->olen, o))
        return CLUSTER_ORIGIN_NONE;
    return o->kind;
}

/* The newest entry of one Runner run in a session's copy: a later entry of
 * that run is taken only when its (runner_seq, part) is above. */
struct js_origin_seen {
    uint64_t nonce, runner_seq, used;
    uint32_t part;
    uint8_t in_use;
    uint8_t id_len;
    char id[CLUSTER_ORIGIN_ID_MAX];
};

/* A keyed call's records in a session's copy. */
struct js_key_seen {
    struct keyset_fp fp; /* fp.a 0: an empty slot */
    uint64_t first_seq, last_seq;
    uint32_t part; /* the highest part taken */
};

/* A session as JetStream sees it: where its subject stands and what this
 * node is writing into it. */
struct js_session {
    struct hash_map_node by_subject;
    struct list_node link;                /* every session, in the order they were made */
    struct js_entry *out_head, *out_tail; /* waiting */
    struct js_entry *fly;                 /* published, not yet acknowledged */
    uint32_t out_frames, fly_frames;
    uint64_t last_stream_seq; /* the subject's newest message known here */
    uint64_t last_seq;        /* the session seq of its newest frame known here */
    uint8_t *fly_buf;         /* the batch as sent, for sending again */
    size_t fly_len;
    uint64_t fly_first_seq;
    uint64_t fly_pred;    /* the stream seq it was written after */
    uint64_t fly_nonce;   /* its Agenthub-Batch */
    uint32_t fly_refused; /* its attempts refused so far: names the next attempt's id */
    uint64_t dup_wait;    /* refused: the first stream seq that tells whose it was */
    uint64_t dup_since_ns;
    uint64_t fly_since_ns;
    uint8_t in_flight;
    uint8_t retry;    /* publish again at retry_at_ns, or once the copy moves on */
    uint8_t refusals; /* the batch's refusals with no message after its predecessor */
    uint64_t retry_at_ns;
    /* Whether the heads stream was asked where the subject stands, made
     * before a first batch when this copy holds no message of it. */
    uint8_t head;
    uint64_t ords;           /* entries taken so far */
    uint64_t ack_lost_nonce; /* tests: the batch whose ack was dropped */
    uint64_t acked;          /* the batch in flight is stored at this stream seq:
                              * done once the consumer applies it */
    struct list_node waits;  /* producers waiting for their entries to be stored
                              * (struct hub_log_wait), the newest first */
    /* What readers take from this subject: the newest entry per Runner run
     * and the recent keyed calls.  Changed only by applying messages, in
     * stream order, so every node's copy decides alike. */
    struct js_origin_seen origins[ORIGINS_KEPT];
    struct js_key_seen *keys;            /* KEYS_KEPT, allocated on first use */
    uint64_t batches_seen[BATCHES_KEPT]; /* Agenthub-Batch of the latest messages */
    uint32_t batches_next;
    uint32_t keys_next;
    uint64_t origins_used;
    /* Read on demand (hub_log_js_demand.c). */
    uint8_t demand;        /* DEMAND_* */
    uint8_t head_asking;   /* DEMAND_HEAD: a lookup in the heads stream is out */
    uint8_t checking;      /* DEMAND_CURRENT: a check of a pane's copy is out */
    uint64_t check_ns;     /* the last check's time */
    uint64_t check_until;  /* the newest stream seq the last check saw ahead of the copy */
    uint64_t deaf_watch;   /* tests: the consumer that delivers nothing (cluster.deaf_consumer) */
    uint64_t watch_id;     /* its consumer (js_link_watch), while not DEMAND_NONE */
    uint64_t demand_until; /* DEMAND_HEAD: current once the copy applied this stream seq */
    uint64_t demand_since_ns;
    uint64_t used_ns;         /* a reader or writer last needed it */
    uint64_t told_last_seq;   /* the newest seq its latest status on the bus named */
    struct list_node readers; /* readers waiting for a current copy (struct hub_log_wait) */
    char subject[SUBJECT_MAX];
    char id[SESSION_MAX_ID + 1];
};

/* The bus writer (hub_log_js_bus.c): events wait in the outbox; one batch
 * is in flight at a time and is sent again until JetStream takes it. */
struct js_bus_out {
    struct byte_queue outbox; /* entries not yet in a batch */
    size_t outbox_events;
    uint8_t *fly; /* the batch in flight (entries), or NULL */
    size_t fly_len, fly_events;
    uint64_t fly_nonce;      /* its name, the same on every attempt */
    uint64_t fly_attempts;   /* attempts made of it */
    uint64_t ack_lost_nonce; /* tests: the batch whose ack was lost once */
    int sent;                /* an attempt awaits its answer */
    uint64_t sent_ns;        /* when it went */
    struct event *timer;     /* the next attempt, after one could not be sent */
    uint64_t events, retries, lost;
};

/* Events of a batch message get bus seqs stream_seq * STRIDE + index. */
#define HUB_LOG_JS_BUS_STRIDE 1024u
/* Beyond this many bytes waiting, new bus events are dropped (counted). */
#define HUB_LOG_JS_BUS_OUTBOX_BYTES (32u * 1024u * 1024u)
/* Nodes whose last bus batch readers remember (to drop a second copy). */
#define HUB_LOG_JS_BUS_ORIGINS 64u

struct js_bus_origin {
    char node[64];
    uint64_t last_nonce;
    int used;
};

struct hub_log_js {
    struct js_link *link;
    struct event_base *base;
    struct session_registry *reg;
    struct bus *bus;
    struct event *retry_timer;
    uint64_t retry_due_ns; /* when retry_timer fires, or 0 when it is not armed */
    struct event *watch_timer;
    struct event *wait_timer;
    uint64_t wait_ns;           /* how long a producer waits for its frames to be stored */
    uint64_t last_ord;          /* the entry enqueue took last */
    struct hash_map by_subject; /* struct js_session by subject */
    struct list_node sessions;  /* the same, to walk: a walk may add one */
    struct runner_marks *marks;
    /* The origin of the frames being taken (hub_log_origin): a Runner's
     * frame, a keyed call, or none; parts counts the entries it made. */
    enum cluster_origin_kind origin_kind;
    char origin[CLUSTER_ORIGIN_ID_MAX + 1];
    size_t origin_len;
    uint64_t origin_seq;
    uint64_t origin_nonce;
    uint32_t origin_parts;
    int origin_derived; /* hub_log_derive: the frames taken now are derived */
    uint64_t epoch;
    uint64_t frames_target, bus_target; /* caught up once applied past these */
    uint64_t frames_applied, bus_applied;
    uint64_t catchup_applied; /* frames_applied + bus_applied at the last watch */
    /* Tests (failpoints cluster.hold_frames, cluster.hold_bus): frames and
     * bus messages held back, as from a consumer that lags, applied in
     * order once released.  [0] frames, [1] the bus. */
    struct js_held *held_head[2], *held_tail[2];
    struct event *hold_timer;
    int got_ready, connected, caught_up;
    int was_writable;            /* what the state listener last heard */
    void (*state_fn)(void *arg); /* the state listener (hub_log_js_on_state) */
    void *state_arg;
    /* metrics */
    uint64_t publish_ns_sum, publish_ns_max, publish_acks;
    uint64_t writer_changes;  /* batches published again after another node wrote */
    uint64_t publish_retries; /* batches sent again after no answer */
    uint64_t batches;         /* the last batch nonce: random at start, then counted, so
                               * no two nodes' batches share one */
    struct js_bus_out bus_out;
    /* This node's copy of the bus: events in the bus ring under its
     * local seqs, their bus seqs (with gaps) in the index. */
    struct seq_index bus_index;
    struct js_bus_origin bus_origins[HUB_LOG_JS_BUS_ORIGINS];
    size_t bus_origins_next;
    uint64_t bus_copies_dropped; /* second copies of a bus batch readers skipped */
    uint64_t apply_gaps;         /* a session's copy resumed past a gap */
    uint64_t copies_dropped;     /* entries readers took once already (by origin or key) */
    uint64_t renumbered;         /* batches whose header seq readers corrected */
    uint64_t heads_applied;      /* subjects continued after the heads stream's message */
    uint64_t waits_failed;       /* producers told their frames could not be stored */
    /* Reading sessions on demand (hub_log_js_demand.c). */
    int on_demand;
    uint64_t linger_ns;         /* an unused session's consumer goes after this */
    struct event *demand_timer; /* the sweep */
    uint64_t runners_watch;     /* the consumer of every Runner's subject */
    int runners_caught;         /* it delivered what they held at the start */
    uint64_t watches_opened, watches_closed;
    uint64_t frames_messages, frames_bytes; /* sessions' messages its consumers delivered */
};

/* The first session JS knows, or NULL; with hub_log_js_session_next, a walk
 * over all of them in the order they were made (one made during the walk
 * is visited too). */
static inline struct js_session *hub_log_js_session_first(const struct hub_log_js *js)
{
    struct list_node *node = list_first(&js->sessions);

    return node ? list_entry(node, struct js_session, link) : NULL;
}

/* The session after E, or NULL. */
static inline struct js_session *hub_log_js_session_next(const struct hub_log_js *js,
                                                         const struct js_session *e)
{
    struct list_node *node = list_next(&js->sessions, &e->link);

    return node ? list_entry(node, struct js_session, link) : NULL;
}

/* --- hub_log_jetstream.c ---------------------------------------------------- */

/* The entry for SUBJECT (made with ID when CREATE).  NULL when absent or
 * memory is short. */
struct js_session *hub_log_js_session_get(struct hub_log_js *js, const char *subject,
                                          const char *id, int create);
void hub_log_js_entries_free(struct js_entry *e);
/* 1 while appends are taken: connected and caught up (IMPL the struct
 * hub_log_js). */
int hub_log_js_writable(void *impl);
/* Tells the state listener when hub_log_js_writable changed since it last
 * heard: after every change of connected or caught_up. */
void hub_log_js_state_changed(struct hub_log_js *js);

/* --- hub_log_js_write.c: the hub_log ops and link events that write --------- */

uint64_t hub_log_js_append(void *impl, struct session *s, const void *frame, size_t len,
                           int64_t at_unix_ms);
void hub_log_js_mark(void *impl, struct session *s, enum hub_log_mark mark);
void hub_log_js_runner_reset(void *impl, const char *runner_id);
void hub_log_js_runner_dealt(void *impl, const char *runner_id, uint64_t first, uint64_t last);
void hub_log_js_runner_sync(void *impl, const char *runner_id, struct hub_log_wait *w);
void hub_log_js_on_ack(void *arg, const char *subject, const char *batch, enum js_ack ack,
                       uint64_t stream_seq);
/* Timers (ARG the struct hub_log_js): a batch waiting on a silent
 * consumer or a replay that stopped moving, sessions to publish again. */
void hub_log_js_watch_later(struct hub_log_js *js);
void hub_log_js_on_watch(evutil_socket_t fd, short what, void *arg);
void hub_log_js_on_retry(evutil_socket_t fd, short what, void *arg);
/* Sends E's batch in flight (again), or makes the next from its outbox. */
void hub_log_js_pump(struct hub_log_js *js, struct js_session *e);
/* Frames message M on E's subject was applied and was not E's batch in
 * flight: when that batch was refused and M is the first message after its
 * predecessor (another node's), the batch is made again after it. */
void hub_log_js_fly_check(struct hub_log_js *js, struct js_session *e, const struct js_link_msg *m);
/* E's batch in flight was applied by this node's consumer: it is stored,
 * its producers are answered (their seqs filled in by the reader), and the
 * next batch goes. */
void hub_log_js_fly_done(struct hub_log_js *js, struct js_session *e);

/* --- hub_log_js_read.c: what a copy takes ----------------------------------- */

/* What a reader does with a tagged entry of ORIGIN on E: 1 take it, 0 it
 * is a copy of one taken.  With TAKE the entry is remembered as taken, at
 * SEQ when it is a keyed record. */
int hub_log_js_origin_admit(struct js_session *e, const struct cluster_wire_origin *origin,
                            uint64_t runner_seq, int take, uint64_t seq);
/* E's keyed call with fingerprint FP: 1 with its seqs when the copy holds
 * its records, else 0. */
int hub_log_js_key_recall(const struct js_session *e, struct keyset_fp fp, uint64_t *first_seq,
                          uint64_t *last_seq);
/* The fingerprint of keyed origin bytes (the key). */
struct keyset_fp hub_log_js_key_fp(const uint8_t *key, size_t len);

/* --- hub_log_js_read.c: the consumers' events and the bus reads -------------- */

void hub_log_js_on_frames(void *arg, const struct js_link_msg *m);
/* Applies M, the heads stream's newest message of a subject this copy
 * holds nothing of, as the consumer would have applied it: the copy then
 * continues after it, as a copy that read it from the frames stream
 * does. */
void hub_log_js_apply_head(struct hub_log_js *js, const struct js_link_msg *m);
/* A bus message (held back while cluster.hold_bus is set), then
 * hub_log_js_bus_apply. */
void hub_log_js_on_bus(void *arg, const struct js_link_msg *m);
/* Tests: the timer releasing held frames messages (ARG the struct
 * hub_log_js), and freeing what is still held. */
void hub_log_js_on_hold(evutil_socket_t fd, short what, void *arg);
void hub_log_js_held_free(struct hub_log_js *js);
void hub_log_js_on_ready(void *arg, uint64_t epoch, uint64_t frames_last, uint64_t bus_last);
uint64_t hub_log_js_epoch(void *impl);

/* Marks the copies caught up once both streams are applied past their
 * targets, and tells the state listener. */
void hub_log_js_check_caught_up(struct hub_log_js *js);

/* --- hub_log_js_demand.c: reading sessions on demand ------------------------ */

/* 1 when E's copy is current and its subject read now (always when not
 * reading on demand, and for a Runner's subject); else starts reading it
 * and returns 0: E is pumped, and its readers answered, once it is. */
int hub_log_js_demand(struct hub_log_js *js, struct js_session *e);
/* E's consumer seems silent (a batch waits on it): reading on demand, a
 * new one is made from the first message its copy does not hold. */
void hub_log_js_demand_renew(struct hub_log_js *js, struct js_session *e);
/* The consumer applied E's message at STREAM_SEQ. */
void hub_log_js_demand_applied(struct hub_log_js *js, struct js_session *e, uint64_t stream_seq);
/* js_link's events.watched. */
void hub_log_js_on_watched(void *arg, uint64_t id, int ok);
/* The streams are set up: the consumer of every Runner's subject is made. */
void hub_log_js_demand_ready(struct hub_log_js *js);
/* Starts the sweep when reading on demand.  Returns 0, or -1 when memory
 * is short. */
int hub_log_js_demand_init(struct hub_log_js *js, uint32_t linger_ms);
void hub_log_js_demand_free(struct hub_log_js *js);
/* The hub_log prepare and reads ops. */
void hub_log_js_prepare(void *impl, struct session *s, struct hub_log_wait *w);
int hub_log_js_reads(void *impl, struct session *s, uint64_t *newest);
/* Bus event PAYLOAD[0..LEN) was applied: a session's status this node
 * does not read sets its copy's state (GetAgentStatus answers it). */
void hub_log_js_demand_status(struct hub_log_js *js, const void *payload, size_t len);

/* --- hub_log_js_bus.c: the bus's writer and reader ------------------------- */

/* Makes the writer's timer; returns 0, or -1 when memory is short. */
int hub_log_js_bus_init(struct hub_log_js *js);
void hub_log_js_bus_free(struct hub_log_js *js);
/* The hub_log publish op: queues the event; its seq comes when it is read
 * back, so it returns 0. */
uint64_t hub_log_js_publish(void *impl, const void *payload, size_t len, int64_t at_unix_ms);
/* JetStream's answer ACK for the bus batch named BATCH. */
void hub_log_js_bus_on_ack(struct hub_log_js *js, const char *batch, enum js_ack ack);
/* The connection came up again: an attempt without an answer is sent again. */
void hub_log_js_bus_on_connection(struct hub_log_js *js);
/* Takes bus message M into this node's copy (hub_log_js_on_bus calls it,
 * unless a test holds the bus consumer back). */
void hub_log_js_bus_apply(struct hub_log_js *js, const struct js_link_msg *m);
/* The hub_log bus reads, in bus seqs, over the index. */
enum bus_status hub_log_js_bus_open(void *impl, uint64_t since_seq, uint64_t epoch,
                                    uint64_t *cursor);
enum bus_status hub_log_js_bus_next(void *impl, uint64_t cursor, struct bus_event *out);
void hub_log_js_bus_subscribe(void *impl, struct watcher *w);
uint64_t hub_log_js_bus_oldest(void *impl);
uint64_t hub_log_js_bus_newest(void *impl);
void hub_log_js_bus_unsubscribe(void *impl, struct watcher *w);
void hub_log_js_bus_write_metrics(const struct hub_log_js *js, FILE *out);

/* --- hub_log_js_wait.c -------------------------------------------------------- */

/* Holds W on E until its entries are applied, or it fails at its deadline
 * (hub_log_js_waits_timer). */
void hub_log_js_waits_hold(struct hub_log_js *js, struct js_session *e, struct hub_log_wait *w);
/* Answers E's waits whose frames are all stored (their last entry at or
 * before ORD). */
void hub_log_js_waits_stored(struct js_session *e, uint64_t ord);
/* Answers E's waits UNAVAILABLE: all of them, or when NOW is not 0 those
 * past their deadline; their keyed entries are withdrawn. */
void hub_log_js_waits_fail(struct hub_log_js *js, struct js_session *e, uint64_t now);
/* W's producer was told UNAVAILABLE: its keyed entries in E (records
 * under an idempotency key, and what they implied) are dropped from the
 * outbox now, and from the batch in flight once that batch is known not
 * stored (hub_log_js_fly_check).  Runner frames stay. */
void hub_log_js_withdraw(struct js_session *e, const struct hub_log_wait *w);
/* Entry ORD of E's batch is stored at SEQ (first_seq..last_seq for a
 * copy of a keyed call): the waits it begins or ends take those seqs. */
void hub_log_js_waits_number(struct js_session *e, uint64_t ord, uint64_t first_seq,
                             uint64_t last_seq);
/* The wait timer (ARG the struct hub_log_js): fails waits past their
 * deadline, and comes again while any is left. */
void hub_log_js_waits_timer(evutil_socket_t fd, short what, void *arg);

#endif
