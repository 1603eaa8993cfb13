/* js_link: one node's connection to a NATS JetStream cluster.
 *
 * The cluster layer sits beside h2: it uses only common, libevent and
 * libnats (the one place libnats is used), and the hub builds its
 * replicated session logs and bus on it (hub/hub_log_jetstream.c).  It
 * knows streams, subjects and sequences, never sessions or frames.
 *
 * libnats works on its own threads: connection handlers, consumer
 * deliveries and publish acknowledgments arrive there.  js_link turns each
 * into an event on a queue and wakes the libevent loop through a pipe, so
 * every callback in struct js_link_events runs on the loop thread, in the
 * order libnats produced them.  Blocking JetStream requests (creating the
 * streams, reading the cluster epoch, creating the consumers) run on one
 * setup thread, started at js_link_new and again after each reconnect
 * while the setup has not completed; the loop never waits on the network.
 *
 * Streams (file storage, --cluster-replicas copies):
 *   AGENTHUB_FRAMES  subjects agenthub.frames.<session>, one message per
 *                    batch of a session's frames (see hub_log_jetstream.c)
 *   AGENTHUB_HEADS   sourced from AGENTHUB_FRAMES by the servers, keeping
 *                    the newest message of each subject however long ago
 *                    the frames stream evicted it: where a session's seq
 *                    stands when its own messages are gone
 *   AGENTHUB_BUS     subject agenthub.bus, one message per batch of a
 *                    node's bus events; bus seq = stream sequence * 1024
 *                    + the event's index in it; its description holds
 *                    the bus's instance_epoch, the same on every node
 *   KV AGENTHUB_CLUSTER  key bus2-epoch.<bus stream creation time>: the
 *                    epoch of a bus stream made without one
 * A node reads the bus whole through an ordered consumer, and the frames
 * stream either whole through another, or (ON_DEMAND) only the subjects
 * it asks for, each through an ordered consumer of its own
 * (js_link_watch). */
#ifndef AGENTHUB_CLUSTER_JS_LINK_H
#define AGENTHUB_CLUSTER_JS_LINK_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct js_link;

#define JS_FRAMES_STREAM  "AGENTHUB_FRAMES"
#define JS_FRAMES_PREFIX  "agenthub.frames."
#define JS_HEADS_STREAM   "AGENTHUB_HEADS"
#define JS_BUS_STREAM     "AGENTHUB_BUS"
#define JS_BUS_SUBJECT    "agenthub.bus"
#define JS_CLUSTER_BUCKET "AGENTHUB_CLUSTER"

struct js_link_config {
    const char *urls;         /* nats://h:p[,nats://h:p...] */
    const char *node_id;      /* the connection name */
    int replicas;             /* copies of each stream (1..5) */
    size_t frames_max_bytes;  /* AGENTHUB_FRAMES's bound */
    size_t bus_max_bytes;     /* AGENTHUB_BUS's bound */
    uint32_t publish_wait_ms; /* how long a publish waits for its ack */
    int on_demand;            /* the frames stream only through watches */
};

/* One message read from a stream.  DATA is valid during the callback. */
struct js_link_msg {
    const char *subject;
    uint64_t stream_seq;
    uint64_t pending;         /* messages of the stream after this one, when read */
    const char *seq_header;   /* Agenthub-Seq, or NULL */
    const char *at_header;    /* Agenthub-At, or NULL */
    const char *batch_header; /* Agenthub-Batch, or NULL */
    const char *node_header;  /* Agenthub-Node, or NULL */
    int from_self;            /* Agenthub-Node is this node's id */
    const uint8_t *data;
    size_t len;
};

enum js_ack {
    JS_ACK_OK = 0,        /* stored at STREAM_SEQ */
    JS_ACK_CONFLICT = 1,  /* the subject's last sequence was not the expected one, but
                             STREAM_SEQ (UINT64_MAX when JetStream did not say) */
    JS_ACK_DUPLICATE = 2, /* a message with its id is stored, at STREAM_SEQ */
    JS_ACK_FAILED = 3,    /* not stored, or not known to be (timeout, no quorum) */
};

struct js_link_events {
    /* The streams exist and both consumers read from their start; EPOCH is
     * the cluster's bus epoch, FRAMES_LAST and BUS_LAST the streams' last
     * sequences when the consumers were made (caught up past them). */
    void (*ready)(void *arg, uint64_t epoch, uint64_t frames_last, uint64_t bus_last);
    void (*frames)(void *arg, const struct js_link_msg *msg);
    void (*bus)(void *arg, const struct js_link_msg *msg);
    /* A publish of SUBJECT finished (frames publishes carry their subject
     * and BATCH, their Agenthub-Batch; bus publishes JS_BUS_SUBJECT). */
    void (*ack)(void *arg, const char *subject, const char *batch, enum js_ack ack,
                uint64_t stream_seq);
    /* The connection to the NATS cluster came up (1) or went down (0). */
    void (*connection)(void *arg, int up);
    /* Watch ID delivered everything its subject held when it was made
     * (OK 1: what comes next is new), or could not be made (OK 0: it is
     * gone; ask again). */
    void (*watched)(void *arg, uint64_t id, int ok);
};

/* Starts connecting (in the background: the servers need not be up yet)
 * and setting the streams up.  Returns NULL with ERR set when the URLs are
 * malformed, the pipe or threads cannot be made, or memory is short. */
struct js_link *js_link_new(struct event_base *base, const struct js_link_config *config,
                            const struct js_link_events *events, void *arg, char *err,
                            size_t errlen);
void js_link_free(struct js_link *link);

/* 1 while connected to a NATS server: the link holds two connections, one
 * for its consumers, setup and request/reply, one that only publishes
 * (frames batches and bus events, each written at once); 1 while both are
 * up. */
int js_link_connected(const struct js_link *link);

/* Publishes DATA to SUBJECT of AGENTHUB_FRAMES, stored only when the
 * subject's last stream sequence is EXPECT_LAST (0: the subject is empty)
 * and no message with id MSG_ID was stored within the duplicate window (2
 * min), with headers Agenthub-Seq SEQ, Agenthub-Batch BATCH (the
 * writer's name for this batch, the same on every attempt) and
 * Agenthub-Node (the node id).  The outcome
 * comes through events.ack.  Returns 0, or -1 when it could not be sent
 * (disconnected, memory): no ack follows then. */
int js_link_publish_frames(struct js_link *link, const char *subject, uint64_t seq,
                           uint64_t expect_last, const char *msg_id, uint64_t batch,
                           const void *data, size_t len);

/* Publishes DATA, a batch of bus events (hub/hub_log_js_bus.c), on
 * JS_BUS_SUBJECT with headers Agenthub-Batch BATCH (the writer's name for
 * it, the same on every attempt) and Agenthub-Node; with WITH_MSG_ID also
 * Nats-Msg-Id bus-BATCH, so an attempt within the duplicate window of one
 * stored is not stored again.  The outcome comes through events.ack.
 * Returns 0, or -1 when it could not be sent (disconnected, memory): no
 * ack follows then. */
int js_link_publish_bus(struct js_link *link, uint64_t batch, int with_msg_id, const void *data,
                        size_t len);

/* --- request/reply (plain NATS, not JetStream) --- */

/* A request to a subject this node serves: answer it with js_link_respond
 * on REPLY (valid during the callback only: copy it). */
typedef void (*js_link_request_fn)(void *arg, const uint8_t *data, size_t len, const char *reply);
/* The answer to a js_link_request: DATA, or NO_RESPONDERS 1 when no node
 * serves the subject. */
typedef void (*js_link_reply_fn)(void *arg, int no_responders, const uint8_t *data, size_t len);

/* Serves SUBJECT in queue group GROUP (one member gets each request) until
 * js_link_unserve(*HANDLE).  Returns 0, or -1 (memory, disconnected). */
int js_link_serve(struct js_link *link, const char *subject, const char *group,
                  js_link_request_fn fn, void *arg, void **handle);
void js_link_unserve(struct js_link *link, void *handle);
/* Returns 0, or -1 when it could not be sent. */
int js_link_respond(struct js_link *link, const char *reply, const void *data, size_t len);
/* Sends a request; FN runs once on the loop with the answer, unless
 * js_link_request_cancel(*ID) comes first (the caller keeps its own
 * deadline).  Returns 0, or -1 when it could not be sent (FN will not run). */
int js_link_request(struct js_link *link, const char *subject, const void *data, size_t len,
                    js_link_reply_fn fn, void *arg, uint64_t *id);
void js_link_request_cancel(struct js_link *link, uint64_t id);

/* --- the heads stream --- */

enum js_last {
    JS_LAST_FOUND,  /* the message is MSG; its stream_seq is its sequence in AGENTHUB_FRAMES,
                       which no longer holds it (evicted) */
    JS_LAST_LIVE,   /* the same, and AGENTHUB_FRAMES still holds it: a consumer of the
                       subject delivers it */
    JS_LAST_NONE,   /* no message of the subject was ever stored (or the heads lost it) */
    JS_LAST_FAILED, /* not known now (disconnected, no quorum, timeout) */
};
/* The outcome of js_link_last for SUBJECT; MSG only with JS_LAST_FOUND. */
typedef void (*js_link_last_fn)(void *arg, const char *subject, enum js_last last,
                                const struct js_link_msg *msg);

/* Reads the newest message of frames SUBJECT that AGENTHUB_HEADS holds,
 * from the heads stream's leader (a replica may lag); FN runs once on the
 * loop with the outcome, unless js_link_request_cancel(*ID) comes first.
 * The read runs on the link's setup thread.  Returns 0, or -1 when memory
 * is short (FN will not run). */
int js_link_last(struct js_link *link, const char *subject, js_link_last_fn fn, void *arg,
                 uint64_t *id);

/* --- consumers of one subject, made on demand --- */

/* Starts reading frames SUBJECT (a subject, or a filter ending in ">")
 * through an ordered consumer of its own, from stream sequence FROM (0:
 * the subject's first message).  Its messages come through events.frames
 * like the whole stream's, in stream order; events.watched tells once it
 * has delivered what the subject held when it was made.  It is made on
 * the setup thread once the streams are set up, and made again from the
 * first message not yet delivered after a reconnect or js_link_refresh.
 * Returns 0 with *ID, or -1 when memory is short. */
int js_link_watch(struct js_link *link, const char *subject, uint64_t from, uint64_t *id);
/* Ends watch ID; messages it delivered before may still come. */
void js_link_unwatch(struct js_link *link, uint64_t id);

struct js_link_stats {
    uint64_t publishes;
    uint64_t publish_failures;
    uint64_t conflicts;
    uint64_t disconnects;
};
void js_link_stats(const struct js_link *link, struct js_link_stats *out);

/* Makes both consumers again from the first message not yet delivered (a
 * consumer may die with the server it was on while this node stays
 * connected elsewhere); what comes twice the caller applies once. */
void js_link_refresh(struct js_link *link);

#endif
