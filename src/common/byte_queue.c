#include "common/byte_queue.h"

#include <stdlib.h>
#include <string.h>

uint8_t *byte_queue_reserve(struct byte_queue *queue, size_t len)
{
    uint8_t *at;

    if (queue->start == queue->end)
        queue->start = queue->end = 0;
    if (queue->end + len > queue->cap && queue->start > 0) {
        memmove(queue->data, queue->data + queue->start, queue->end - queue->start);
        queue->end -= queue->start;
        queue->start = 0;
    }
    if (queue->end + len > queue->cap) {
        size_t cap = queue->cap ? queue->cap : 1024;
        while (cap < queue->end + len)
            cap *= 2;
        uint8_t *data = realloc(queue->data, cap);
        if (!data)
            return NULL;
        queue->data = data;
        queue->cap = cap;
    }
    at = queue->data + queue->end;
    queue->end += len;
    return at;
}

void byte_queue_free(struct byte_queue *queue)
{
    free(queue->data);
    memset(queue, 0, sizeof(*queue));
}
