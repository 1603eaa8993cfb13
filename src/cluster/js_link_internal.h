/* js_link_internal: what js_link.c and js_setup.c share (not for other
 * modules): the link's state and the queue that hands libnats's events to
 * the loop. */
#ifndef AGENTHUB_CLUSTER_JS_LINK_INTERNAL_H
#define AGENTHUB_CLUSTER_JS_LINK_INTERNAL_H

#include <event2/event.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>

#include "cluster/js_link.h"

#define JS_MAX_URLS       16
#define JS_SETUP_RETRY_MS 250
/* How long a write to a NATS server may wait for room in the socket before
 * the connection is given up (and made again). */
#define JS_WRITE_DEADLINE_MS 1000

enum js_event_kind {
    JS_EV_READY,
    JS_EV_FRAMES,
    JS_EV_BUS,
    JS_EV_ACK,
    JS_EV_CONNECTION,
    JS_EV_REQUEST,
    JS_EV_REPLY,
    JS_EV_LAST,
    JS_EV_WATCH
};

/* A subject this node serves.  Freed with the link: a request queued
 * before js_link_unserve still names it (and is then dropped). */
struct js_serve {
    struct js_serve *next;
    natsSubscription *sub;
    js_link_request_fn fn;
    void *arg;
    struct js_link *link;
    int dead;
};

/* A request waiting for its answer (loop thread only): a plain request's
 * (FN) or a lookup's (LAST_FN). */
struct js_pending {
    struct js_pending *next;
    uint64_t id;
    js_link_reply_fn fn;
    js_link_last_fn last_fn;
    void *arg;
};

/* A lookup in AGENTHUB_HEADS queued for the setup thread, with the event
 * that will carry its outcome (made with it, so an answer never waits on
 * memory). */
struct js_lookup {
    struct js_lookup *next;
    struct js_event *ev;
    char subject[];
};

/* One thing libnats told on its threads, queued for the loop. */
struct js_event {
    struct js_event *next;
    enum js_event_kind kind;
    natsMsg *msg; /* FRAMES, BUS, ACK: owned, destroyed after dispatch */
    enum js_ack ack;
    uint64_t seq;
    uint64_t pending;
    uint64_t epoch, frames_last, bus_last; /* READY */
    int up;                                /* CONNECTION */
    struct js_serve *serve;                /* REQUEST */
    enum js_last last;                     /* LAST: the outcome (msg only when found) */
    uint64_t request;                      /* LAST: the lookup's id */
    char *subject;                         /* LAST: what was looked up (owned) */
    int live;                              /* LAST: the frames stream still holds it */
    int ok;                                /* WATCH: caught up (1) or not made (0) */
};

/* A consumer of one subject made on demand (js_link_watch).  The setup
 * thread makes, remakes and closes its subscriptions; their handler
 * (libnats's threads) only touches NEXT_SEQ, CAUGHT and SUBS_OPEN. */
struct js_watch {
    struct js_watch *next; /* the setup thread's list: live, then closed */
    struct js_link *link;
    uint64_t id;
    uint64_t from;          /* the first stream seq asked for (0: the subject's first) */
    natsSubscription *sub;  /* NULL until made */
    atomic_ullong next_seq; /* the first stream seq not yet delivered */
    atomic_int caught;      /* the loop was told it caught up */
    /* Subscriptions of it whose handler may still run: it is freed once
     * closed and none is left (libnats tells when a closed one's last
     * handler has returned). */
    atomic_int subs_open;
    char subject[];
};

/* A request for the setup thread: make a watch (FROM, SUBJECT), or with
 * CLOSE end watch ID. */
struct js_watch_op {
    struct js_watch_op *next;
    uint64_t id, from;
    int close;
    char subject[];
};

struct js_link {
    struct event_base *base;
    struct js_link_config config;
    struct js_link_events events;
    void *arg;
    char *urls_copy;
    const char *urls[JS_MAX_URLS];
    int nurls;

    natsOptions *opts;
    natsConnection *nc; /* consumers, setup, request/reply */
    jsCtx *js;
    /* Batches and bus events go through a connection of their own that
     * writes each publish at once (js_link.c, make_options). */
    natsOptions *pub_opts;
    natsConnection *pub_nc;
    jsCtx *pub_js;
    pthread_mutex_t state_lock; /* guards the two up flags and connected's changes */
    int nc_up, pub_up;
    natsSubscription *frames_sub, *bus_sub;
    natsSubscription *inbox_sub; /* <inbox>.* : answers to this node's requests */
    char inbox[64];
    size_t inbox_len;
    struct js_serve *serves;
    struct js_pending *pending;
    uint64_t next_request;

    pthread_mutex_t lock; /* guards the queue */
    struct js_event *head, *tail;
    int pipe_fds[2];
    struct event *wake;

    pthread_t setup_thread;
    int setup_started;
    int bus_replaced; /* tests: cluster.bus_replaced_once did its replacement */
    /* Lookups for the setup thread, which waits on SETUP_COND between its
     * rounds; guarded by LOCK. */
    pthread_cond_t setup_cond;
    struct js_lookup *lookups_head, *lookups_tail;
    struct js_watch_op *watch_ops_head, *watch_ops_tail;
    struct js_watch *watches, *watches_closed; /* setup thread only, then js_link_free */
    uint64_t next_watch;                       /* loop thread */
    atomic_int stopping;
    atomic_int connected;      /* both connections are up */
    atomic_int resubscribe;    /* reconnected: make the consumers again */
    atomic_ullong frames_next; /* the first stream seq not yet delivered */
    atomic_ullong bus_next;

    struct js_link_stats stats; /* loop thread only, but disconnects */
    atomic_ullong disconnects;
};

/* Queues EV for the loop and wakes it (any thread); after js_link_free
 * began, EV is dropped. */
void js_link_post(struct js_link *link, struct js_event *ev);
/* A zeroed event of KIND, or NULL when memory is short. */
struct js_event *js_link_event_alloc(enum js_event_kind kind);
/* Frees EV (may be NULL) and what it owns. */
void js_link_event_free(struct js_event *ev);
/* Frees lookup L and the event it still holds. */
void js_link_lookup_free(struct js_lookup *l);
/* The consumers' message handlers (libnats's threads). */
void js_link_on_frames_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure);
void js_link_on_bus_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure);
/* Queues MSG, a message of kind KIND delivered by a consumer, for the
 * loop, with its stream sequence and pending count; *NEXT (the first
 * sequence its consumer has not delivered) rises past its sequence.
 * Returns the messages pending after it, or -1 when it was dropped
 * (memory, no metadata). */
long long js_link_queue_msg(struct js_link *link, natsMsg *msg, enum js_event_kind kind,
                            atomic_ullong *next);
/* An ordered consumer of STREAM's SUBJECT from stream sequence FROM (0:
 * the first), its messages to CB with CLOSURE.  NULL when it cannot be
 * made now. */
natsSubscription *js_link_ordered_consumer(struct js_link *link, const char *stream,
                                           const char *subject, natsMsgHandler cb, void *closure,
                                           uint64_t from);
/* js_watch.c, on the setup thread: the queued watch requests, once the
 * streams are set up; every watch made again after a reconnect (returns
 * 0, or -1 when one could not be: asked again later); closed watches
 * whose last handler returned freed. */
void js_watch_run_ops(struct js_link *link);
int js_watch_resubscribe(struct js_link *link);
void js_watch_reap(struct js_link *link);
/* js_link_free: each watch's subscription before the connection closes,
 * then, once libnats is closed, every watch and queued request. */
void js_watch_drop_subs(struct js_link *link);
void js_watch_free_all(struct js_link *link);

/* The setup thread's body (js_setup.c): streams, epoch, consumers, and
 * the lookups in AGENTHUB_HEADS. */
void *js_link_setup_main(void *arg);
/* Fills M from MSG, a message of AGENTHUB_FRAMES (or of AGENTHUB_HEADS,
 * then with its stream sequence in the frames stream), at STREAM_SEQ. */
void js_link_msg_fill(const struct js_link *link, natsMsg *msg, uint64_t stream_seq,
                      struct js_link_msg *m);

#endif
