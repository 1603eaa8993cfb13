/* relay: agent frames out on PublishEvents, runner-sequenced.
 *
 * runner_seq is assigned when a frame is first sent, so frames queued while
 * disconnected continue from the server's last accepted runner_seq (Enroll)
 * even after a restart of the Runner.  Sent frames are kept (up to
 * RELAY_KEEP_SENT) until an Enroll confirms them; after a reconnect those the
 * server did not accept are resent with their original runner_seq, so the
 * server neither loses them nor counts a retry.
 *
 * Writes pause while more than RELAY_HIGH_WATER bytes wait in the stream's
 * send queue (a slow server); frames then wait in the pending queue, which
 * drops its oldest beyond RELAY_MAX_PENDING (the server logs the gap). */
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "runner/agent_frames.h"
#include "runner/runner.h"

#define RELAY_MAX_PENDING 65536
#define RELAY_KEEP_SENT   4096
#define RELAY_HIGH_WATER  (1024 * 1024)
#define RELAY_PACE_MS     20

static void item_free(struct relay_item *item)
{
    free(item->session_id);
    free(item->frame);
    free(item);
}

static void list_free(struct relay_item *item)
{
    while (item) {
        struct relay_item *next = item->next;
        item_free(item);
        item = next;
    }
}

static void relay_flush(struct relay *relay);

static void on_pace(evutil_socket_t fd, short what, void *arg)
{
    relay_flush(arg);
}

int relay_init(struct relay *relay, struct event_base *base)
{
    memset(relay, 0, sizeof(*relay));
    relay->next_seq = 1;
    relay->pace = evtimer_new(base, on_pace, relay);
    return relay->pace ? 0 : -1;
}

void relay_free(struct relay *relay)
{
    list_free(relay->pending);
    list_free(relay->sent);
    relay->pending = relay->pending_tail = relay->sent = relay->sent_tail = NULL;
    relay->n_pending = relay->n_sent = 0;
    if (relay->pace)
        event_free(relay->pace);
    relay->pace = NULL;
}

/* Writes ITEM on the stream.  Returns 0 or -1. */
static int item_write(struct relay *relay, const struct relay_item *item)
{
    uint8_t *buf;
    size_t len;
    int rv;

    if (agent_frames_publish_request(item->seq, item->session_id, item->frame, item->frame_len,
                                     &buf, &len) != 0)
        return -1;
    rv = grpc_client_call_send_encoded(relay->call, buf, len);
    free(buf);
    return rv;
}

/* Moves the head of the pending queue to the sent list. */
static void pending_to_sent(struct relay *relay)
{
    struct relay_item *item = relay->pending;

    relay->pending = item->next;
    if (!relay->pending)
        relay->pending_tail = NULL;
    relay->n_pending--;
    item->next = NULL;
    if (relay->sent_tail)
        relay->sent_tail->next = item;
    else
        relay->sent = item;
    relay->sent_tail = item;
    relay->n_sent++;
    while (relay->n_sent > RELAY_KEEP_SENT && relay->sent) {
        struct relay_item *old = relay->sent;
        relay->sent = old->next;
        relay->n_sent--;
        item_free(old);
    }
    if (!relay->sent)
        relay->sent_tail = NULL;
}

/* Sends the pending queue in order while a stream is open. */
static void relay_flush(struct relay *relay)
{
    while (relay->call && relay->pending) {
        struct relay_item *item = relay->pending;
        if (grpc_client_call_pending_bytes(relay->call) > RELAY_HIGH_WATER) {
            struct timeval tv = {0, RELAY_PACE_MS * 1000};
            evtimer_add(relay->pace, &tv);
            return;
        }
        item->seq = relay->next_seq;
        if (item_write(relay, item) != 0) {
            item->seq = 0;
            log_warn("cannot queue a frame on PublishEvents; will retry after a reconnect");
            return;
        }
        relay->next_seq++;
        pending_to_sent(relay);
    }
}

int relay_enqueue(struct runner *r, const char *session_id, uint8_t *frame, size_t frame_len)
{
    struct relay *relay = &r->relay;
    struct relay_item *item = calloc(1, sizeof(*item));

    if (!item || !(item->session_id = strdup(session_id))) {
        free(item);
        free(frame);
        return -1;
    }
    item->frame = frame;
    item->frame_len = frame_len;
    if (relay->n_pending >= RELAY_MAX_PENDING) {
        struct relay_item *old = relay->pending;
        relay->pending = old->next;
        relay->n_pending--;
        item_free(old);
        if (relay->dropped++ % 1000 == 0)
            log_warn("relay queue full while disconnected: dropping the oldest frames");
    }
    if (relay->pending_tail)
        relay->pending_tail->next = item;
    else
        relay->pending = item;
    relay->pending_tail = item;
    relay->n_pending++;
    relay_flush(relay);
    return 0;
}

int relay_attach(struct runner *r, struct grpc_client_call *call, uint64_t last_seq)
{
    struct relay *relay = &r->relay;
    struct relay_item *item;
    size_t resent = 0;

    /* The server has everything up to LAST_SEQ. */
    while (relay->sent && relay->sent->seq <= last_seq) {
        item = relay->sent;
        relay->sent = item->next;
        relay->n_sent--;
        item_free(item);
    }
    if (!relay->sent)
        relay->sent_tail = NULL;
    relay->call = call;
    for (item = relay->sent; item; item = item->next) {
        if (item_write(relay, item) != 0) {
            relay->call = NULL;
            return -1;
        }
        resent++;
    }
    if (relay->next_seq <= last_seq)
        relay->next_seq = last_seq + 1;
    if (relay->sent && relay->sent->seq > last_seq + 1)
        log_warn("frames %llu..%llu were lost before the reconnect",
                 (unsigned long long)(last_seq + 1), (unsigned long long)(relay->sent->seq - 1));
    if (resent)
        log_info("resent %zu unacknowledged frames from runner_seq %llu", resent,
                 (unsigned long long)relay->sent->seq);
    relay_flush(relay);
    return 0;
}

void relay_detach(struct runner *r)
{
    r->relay.call = NULL;
}
