#include "runner/batch.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

static int64_t batch_now(struct batch *b)
{
    return b->ops.now ? b->ops.now(b->ctx) : clock_unix_ms();
}

static void batch_emit(struct batch *b, uint32_t count, int64_t fires_at)
{
    if (b->ops.pending != NULL)
        b->ops.pending(b->ctx, count, fires_at > 0 ? (uint64_t)fires_at : 0);
}

static void batch_free_items(struct batch_item *it)
{
    while (it != NULL) {
        struct batch_item *next = it->next;
        free(it);
        it = next;
    }
}

void batch_init(struct batch *b, int64_t window_ms, const struct batch_ops *ops, void *ctx)
{
    memset(b, 0, sizeof(*b));
    if (ops != NULL)
        b->ops = *ops;
    b->ctx = ctx;
    b->window_ms = window_ms < 0 ? 0 : window_ms;
}

void batch_free(struct batch *b)
{
    batch_free_items(b->head);
    b->head = b->tail = NULL;
    b->count = 0;
    b->open = 0;
}

/* Arms or re-arms the window from now and announces it. */
static void batch_arm(struct batch *b)
{
    b->open = 1;
    b->fires_at = batch_now(b) + b->window_ms;
    batch_emit(b, b->count, b->fires_at);
}

int batch_push(struct batch *b, const void *data, size_t len)
{
    struct batch_item *it;

    if (b->ended)
        return -2;
    it = malloc(sizeof(*it) + len + 1);
    if (it == NULL)
        return -1;
    it->next = NULL;
    it->len = len;
    if (len > 0)
        memcpy(it->data, data, len);
    it->data[len] = '\0';
    if (b->tail != NULL)
        b->tail->next = it;
    else
        b->head = it;
    b->tail = it;
    b->count++;
    if (!b->running)
        batch_arm(b);
    return 0;
}

/* Closes the window, announces count 0 and delivers the burst. */
static void batch_fire(struct batch *b)
{
    struct batch_item *items = b->head;
    uint32_t n = b->count;

    b->head = b->tail = NULL;
    b->count = 0;
    b->open = 0;
    b->fires_at = 0;
    batch_emit(b, 0, 0);
    if (b->ops.fire != NULL)
        b->ops.fire(b->ctx, items, n);
    batch_free_items(items);
}

void batch_set_running(struct batch *b, int running)
{
    running = running ? 1 : 0;
    if (b->ended || running == b->running)
        return;
    b->running = running;
    if (running && b->open) {
        b->open = 0;
        b->fires_at = 0;
        batch_emit(b, 0, 0);
    } else if (!running && b->count > 0) {
        batch_arm(b);
    }
}

int batch_tick(struct batch *b, int64_t now)
{
    if (!b->open || now < b->fires_at)
        return 0;
    batch_fire(b);
    return 1;
}

int64_t batch_next_deadline(const struct batch *b)
{
    return b->open ? b->fires_at : -1;
}

int batch_start_now(struct batch *b)
{
    if (!b->open)
        return 0;
    batch_fire(b);
    return 1;
}

void batch_end(struct batch *b)
{
    b->ended = 1;
    batch_free(b);
    b->fires_at = 0;
}

uint32_t batch_waiting(const struct batch *b)
{
    return b->count;
}
