/* hub_log_jetstream: session logs and the bus replicated through NATS
 * JetStream (cluster/js_link.h), so every node of a cluster serves every
 * session and one bus.
 *
 * JetStream holds the truth; each node keeps a copy in the same memory
 * structures the single-node server uses (each session's core ring, one
 * core bus), filled only from its ordered consumers, so delivery reads,
 * bounds and resume checks are the memory backend's.  Writes go to
 * JetStream first and reach every node's copy, the writer's included,
 * when the stream delivers them.
 *
 * A session's frames: subject agenthub.frames.<session>; one message
 * carries a batch of consecutive frames and marks, header Agenthub-Seq the
 * session seq of its first frame.  One writer at a time per session is
 * enforced by JetStream itself: every publish expects the subject's last
 * stream sequence the writer last saw (Nats-Expected-Last-Subject-Sequence),
 * so two nodes writing the same session never both succeed on the same
 * predecessor; the loser learns the winner's frames from its consumer and
 * publishes again after them.  While one batch of a session is in flight
 * the next frames wait in its outbox and go together, so the seq stays
 * contiguous without a round trip per frame.
 *
 * The bus: subject agenthub.bus, one message per event; the stream
 * sequence is the bus seq and the epoch is the cluster's (js_link.h), so a
 * subscriber may resume on any node. */
#ifndef AGENTHUB_HUB_LOG_JETSTREAM_H
#define AGENTHUB_HUB_LOG_JETSTREAM_H

#include "hub/hub_log.h"

struct event_base;
struct hub_log_js;
struct js_link;

struct hub_log_js_config {
    const char *urls;
    const char *node_id;
    int replicas;
    size_t frames_max_bytes;
    size_t bus_max_bytes;
    uint32_t publish_wait_ms;
    /* Read a session only while this node has a reader or writer for it,
     * letting it go after LINGER_MS unused (hub_log_js_demand.c). */
    int on_demand;
    uint32_t linger_ms;
};

/* Makes LOG the JetStream implementation over REG's sessions and BUS (the
 * node's copies).  Connecting happens in the background.  Returns the
 * backend (free with hub_log_js_free after every user is gone), or NULL
 * with ERR set. */
struct hub_log_js *hub_log_jetstream(struct hub_log *log, struct event_base *base,
                                     struct session_registry *reg, struct bus *bus,
                                     const struct hub_log_js_config *config, char *err,
                                     size_t errlen);
void hub_log_js_free(struct hub_log_js *js);

/* Called with ARG each time whether JS takes appends (hub_log_writable)
 * changed: the node lost or regained NATS, or caught up with the streams.
 * Runs on the event loop; it may call into the hub_log. */
typedef void (*hub_log_js_state_fn)(void *arg);

/* Makes FN (with ARG) JS's one state listener; FN NULL removes it. */
void hub_log_js_on_state(struct hub_log_js *js, hub_log_js_state_fn fn, void *arg);

/* Why JS takes no appends now, in words for /healthz, into BUF (LEN
 * bytes): NATS unreachable, the streams not set up yet, or the replay
 * after a start and how far it got.  Returns BUF. */
const char *hub_log_js_waiting_for(const struct hub_log_js *js, char *buf, size_t len);

/* The NATS connection JS uses, for other cluster traffic (runner_remote). */
struct js_link *hub_log_js_link(const struct hub_log_js *js);

#endif
