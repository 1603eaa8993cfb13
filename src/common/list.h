/* list: an intrusive doubly linked list, circular through a head node (the
 * shape of libuv's queue.h).  A structure that can be on a list embeds a
 * `struct list_node` and finds itself again with list_entry(); the list
 * itself is one `struct list_node` used as the head.  Nothing allocates, and
 * insertion and removal are O(1) without knowing which list a node is on.
 *
 * A head must be list_init()ed before use (it points at itself when the
 * list is empty).  A node needs no initialisation: a zeroed node is
 * unlinked, list_remove() unlinks it again (both pointers NULL), and
 * list_is_linked() tells the two apart, so an owner can ask "is this wait
 * still queued?" without a flag of its own.
 *
 * Iteration with list_for_each() must not remove the node it stands on;
 * list_for_each_safe() may remove (and free) that node, but no other.
 *
 * Not thread-safe; every caller keeps a list on one thread. */
#ifndef AGENTHUB_COMMON_LIST_H
#define AGENTHUB_COMMON_LIST_H

#include <stddef.h>

#include "common/container_of.h"

struct list_node {
    struct list_node *next;
    struct list_node *prev;
};

/* The structure of TYPE whose list_node MEMBER is NODE. */
#define list_entry(node, type, member) container_of(node, type, member)

/* Makes HEAD an empty list. */
static inline void list_init(struct list_node *head)
{
    head->next = head;
    head->prev = head;
}

static inline int list_is_empty(const struct list_node *head)
{
    return head->next == head;
}

/* Whether NODE is on a list (a zeroed or removed node is not). */
static inline int list_is_linked(const struct list_node *node)
{
    return node->next != NULL;
}

/* Links NODE between PREV and NEXT, which are adjacent. */
static inline void list_link_between(struct list_node *node, struct list_node *prev,
                                     struct list_node *next)
{
    node->prev = prev;
    node->next = next;
    prev->next = node;
    next->prev = node;
}

/* Adds NODE (not on any list) at the front of HEAD. */
static inline void list_insert_head(struct list_node *head, struct list_node *node)
{
    list_link_between(node, head, head->next);
}

/* Adds NODE (not on any list) at the back of HEAD. */
static inline void list_insert_tail(struct list_node *head, struct list_node *node)
{
    list_link_between(node, head->prev, head);
}

/* Takes NODE off its list and marks it unlinked.  Removing an unlinked
 * node does nothing, so teardown paths may remove unconditionally. */
static inline void list_remove(struct list_node *node)
{
    if (node->next == NULL)
        return;
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->next = NULL;
    node->prev = NULL;
}

/* The first node of HEAD, or NULL when it is empty. */
static inline struct list_node *list_first(const struct list_node *head)
{
    return head->next == head ? NULL : head->next;
}

/* The last node of HEAD, or NULL when it is empty. */
static inline struct list_node *list_last(const struct list_node *head)
{
    return head->prev == head ? NULL : head->prev;
}

/* The node after NODE on HEAD, or NULL when NODE is the last. */
static inline struct list_node *list_next(const struct list_node *head,
                                          const struct list_node *node)
{
    return node->next == head ? NULL : node->next;
}

/* Walks NODE over HEAD, front to back. */
#define list_for_each(node, head)                                                                  \
    for ((node) = (head)->next; (node) != (head); (node) = (node)->next)

/* The same, but NODE may be removed (and freed) in the body: NEXT holds
 * its successor. */
#define list_for_each_safe(node, next, head)                                                       \
    for ((node) = (head)->next, (next) = (node)->next; (node) != (head);                           \
         (node) = (next), (next) = (node)->next)

#endif
