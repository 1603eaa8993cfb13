/* byte_queue: a growable FIFO of bytes, compacted in place. */
#ifndef AGENTHUB_BYTE_QUEUE_H
#define AGENTHUB_BYTE_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct byte_queue {
    uint8_t *data;
    size_t start; /* bytes live in [start, end) */
    size_t end;
    size_t cap;
};

/* Appends LEN uninitialized bytes and returns where they start, or NULL
 * when memory is short (the queue is unchanged). */
uint8_t *byte_queue_reserve(struct byte_queue *queue, size_t len);

static inline size_t byte_queue_length(const struct byte_queue *queue)
{
    return queue->end - queue->start;
}

/* Drops LEN bytes from the front. */
static inline void byte_queue_consume(struct byte_queue *queue, size_t len)
{
    queue->start += len;
    if (queue->start == queue->end)
        queue->start = queue->end = 0;
}

static inline void byte_queue_clear(struct byte_queue *queue)
{
    queue->start = queue->end = 0;
}

void byte_queue_free(struct byte_queue *queue);

#endif
