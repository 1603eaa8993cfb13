/* watch: intrusive wake-up lists for subscribers of a session or the bus.
 *
 * The RPC layer embeds a struct watcher in its per-stream state.  A producer
 * appends, then calls watch_list_wake(): each watcher's wake() runs once and
 * must only schedule work (resume the data provider, activate an event); it
 * never blocks the producer.  A wake() may unlink its own watcher or any other
 * one; a wake() that appends to the same list (and so wakes again) is folded
 * into one more pass of the outer loop rather than recursing. */
#ifndef AGENTHUB_CORE_WATCH_H
#define AGENTHUB_CORE_WATCH_H

#include <stddef.h>

#include "common/list.h"

struct watcher {
    void (*wake)(struct watcher *w);
    struct list_node link;
};

struct watch_list {
    struct list_node watchers;   /* in join order */
    struct list_node *iter_next; /* next watcher of a running wake pass */
    size_t count;
    int waking;
    int rewake;
};

void watch_list_init(struct watch_list *l);
/* Links W (its wake must be set) at the end of L.  W must not be linked. */
void watch_list_add(struct watch_list *l, struct watcher *w);
/* Unlinks W from L; safe during a wake pass.  W must be linked in L. */
void watch_list_remove(struct watch_list *l, struct watcher *w);
/* Calls every linked watcher's wake once (see the header comment). */
void watch_list_wake(struct watch_list *l);

#endif
