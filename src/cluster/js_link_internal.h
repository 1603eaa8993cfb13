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
    JS_EV_LAST
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
/* The setup thread's body (js_setup.c): streams, epoch, consumers, and
 * the lookups in AGENTHUB_HEADS. */
void *js_link_setup_main(void *arg);
/* Fills M from MSG, a message of AGENTHUB_FRAMES (or of AGENTHUB_HEADS,
 * then with its stream sequence in the frames stream), at STREAM_SEQ. */
void js_link_msg_fill(const struct js_link *link, natsMsg *msg, uint64_t stream_seq,
                      struct js_link_msg *m);

#endif
