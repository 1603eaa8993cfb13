/* batch: the agent-side batch window of the reference Runner; an open
 * window reaches the observation pane as batch_pending frames.
 *
 * While the agent is idle, inbound items (SendAgentMessage deliveries) are
 * held in a window so a burst lands in one turn:
 *  - an item arriving while idle arms or re-arms the window: fires_at = now +
 *    window, and ops.pending(count = items waiting, fires_at) is emitted;
 *  - the window firing (batch_tick at/after fires_at, or batch_start_now)
 *    emits pending(0, 0) and then hands every waiting item to ops.fire;
 *  - the agent starting to run while the window is open cancels it: emits
 *    pending(0, 0); the items stay queued;
 *  - items arriving while the agent runs are queued silently; when the agent
 *    goes idle again with items queued, the window arms (pending(count, ...));
 *  - batch_end (the agent ended) closes the window with no count-0 event (the
 *    terminal session status closes it) and drops the items;
 *  - batch_start_now fires an open window at once and does nothing otherwise.
 *
 * Time comes from ops.now (NULL: clock_unix_ms); batch_tick takes it
 * explicitly so the Runner can drive it from a libevent timer set to
 * batch_next_deadline().  Callbacks may call back into the batch (e.g. fire()
 * calling batch_set_running(b, 1)); state is settled before each callback. */
#ifndef AGENTHUB_CORE_BATCH_H
#define AGENTHUB_CORE_BATCH_H

#include <stddef.h>
#include <stdint.h>

struct batch_item {
    struct batch_item *next;
    size_t len;
    uint8_t data[]; /* NUL-terminated copy for convenience (not counted in len) */
};

struct batch_ops {
    /* SessionBatchPending(count, fires_at_unix_ms). */
    void (*pending)(void *ctx, uint32_t count, uint64_t fires_at_unix_ms);
    /* Delivers the burst; ITEMS (a list of COUNT) is freed after it returns. */
    void (*fire)(void *ctx, const struct batch_item *items, uint32_t count);
    /* Wall clock in ms; NULL means clock_unix_ms(). */
    int64_t (*now)(void *ctx);
};

struct batch {
    struct batch_ops ops;
    void *ctx;
    int64_t window_ms;
    struct batch_item *head;
    struct batch_item *tail;
    uint32_t count;
    int open;
    int64_t fires_at;
    int running;
    int ended;
};

/* Starts with the agent idle, nothing waiting, the window closed. */
void batch_init(struct batch *b, int64_t window_ms, const struct batch_ops *ops, void *ctx);
/* Drops waiting items without any event. */
void batch_free(struct batch *b);

/* Queues a copy of DATA[0..LEN) (see the header comment for the events).
 * Returns 0, -1 when memory runs out, -2 after batch_end (item refused). */
int batch_push(struct batch *b, const void *data, size_t len);
/* The agent started (1) or finished (0) a turn. */
void batch_set_running(struct batch *b, int running);
/* Fires the window when it is open and NOW >= fires_at.  Returns 1 if fired. */
int batch_tick(struct batch *b, int64_t now);
/* fires_at of the open window, or -1 when it is closed. */
int64_t batch_next_deadline(const struct batch *b);
/* SkipBatchWindow's start_now: fires an open window at once.  Returns 1 if it
 * fired, 0 when no window was open. */
int batch_start_now(struct batch *b);
/* The agent ended: close without a count-0 event and drop waiting items. */
void batch_end(struct batch *b);
uint32_t batch_waiting(const struct batch *b);

#endif
