/* container_of: from a pointer to a member embedded in a structure back to
 * the structure.  Intrusive containers (list.h, hash_map.h) and callbacks
 * that hand back a member (a timer, a wait, a stream's hooks) use it to
 * find their owner without a separate allocation or a void pointer. */
#ifndef AGENTHUB_COMMON_CONTAINER_OF_H
#define AGENTHUB_COMMON_CONTAINER_OF_H

#include <stddef.h>

/* The TYPE whose MEMBER is at PTR.  PTR must really point at that member of
 * a TYPE; nothing checks it. */
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

#endif
