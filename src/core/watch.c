#include "core/watch.h"

void watch_list_init(struct watch_list *l)
{
    list_init(&l->watchers);
    l->iter_next = NULL;
    l->count = 0;
    l->waking = 0;
    l->rewake = 0;
}

void watch_list_add(struct watch_list *l, struct watcher *w)
{
    /* Appending at the tail keeps wake order equal to join order. */
    list_insert_tail(&l->watchers, &w->link);
    l->count++;
}

void watch_list_remove(struct watch_list *l, struct watcher *w)
{
    if (l->iter_next == &w->link)
        l->iter_next = list_next(&l->watchers, &w->link);
    list_remove(&w->link);
    l->count--;
}

void watch_list_wake(struct watch_list *l)
{
    struct list_node *node;

    if (l->waking) {
        /* Re-entered from a wake(): the outer pass runs once more instead. */
        l->rewake = 1;
        return;
    }
    l->waking = 1;
    do {
        l->rewake = 0;
        for (node = list_first(&l->watchers); node != NULL; node = l->iter_next) {
            struct watcher *w = list_entry(node, struct watcher, link);
            l->iter_next = list_next(&l->watchers, node);
            w->wake(w);
        }
    } while (l->rewake);
    l->iter_next = NULL;
    l->waking = 0;
}
