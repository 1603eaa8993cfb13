#include "core/watch.h"

void watch_list_init(struct watch_list *l)
{
    l->head = NULL;
    l->tail = NULL;
    l->iter_next = NULL;
    l->count = 0;
    l->waking = 0;
    l->rewake = 0;
}

void watch_list_add(struct watch_list *l, struct watcher *w)
{
    /* Appending at the tail keeps wake order equal to join order. */
    w->next = NULL;
    w->prev = l->tail;
    if (l->tail == NULL)
        l->head = w;
    else
        l->tail->next = w;
    l->tail = w;
    l->count++;
}

void watch_list_remove(struct watch_list *l, struct watcher *w)
{
    if (l->iter_next == w)
        l->iter_next = w->next;
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        l->head = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    else
        l->tail = w->prev;
    w->prev = NULL;
    w->next = NULL;
    l->count--;
}

void watch_list_wake(struct watch_list *l)
{
    struct watcher *w;

    if (l->waking) {
        /* Re-entered from a wake(): the outer pass runs once more instead. */
        l->rewake = 1;
        return;
    }
    l->waking = 1;
    do {
        l->rewake = 0;
        for (w = l->head; w != NULL; w = l->iter_next) {
            l->iter_next = w->next;
            w->wake(w);
        }
    } while (l->rewake);
    l->iter_next = NULL;
    l->waking = 0;
}
