/* libFuzzer target for a cluster's batch messages and subjects
 * (hub/cluster_wire.h): any body either yields entries that lie inside it
 * and re-encode to the same bytes, or stops cleanly; any subject either
 * names a session whose subject is itself, or is refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hub/cluster_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cluster_wire_entry e;
    char subject[CLUSTER_SUBJECT_MAX + 64], id[SESSION_MAX_ID + 1], again[CLUSTER_SUBJECT_MAX];
    size_t off = 0, before;
    uint8_t *copy;
    int rv;

    while ((before = off, rv = cluster_wire_next(data, size, &off, &e)) == 1) {
        if (e.origin < data || e.frame + e.frame_len > data + size || off <= before)
            abort();
        copy = malloc(cluster_wire_entry_size(&e));
        if (!copy)
            abort();
        if (cluster_wire_put(copy, &e) != off - before || memcmp(copy, data + before, off - before))
            abort();
        free(copy);
    }
    if (rv == 0 && off != size)
        abort();
    /* The same bytes as a subject. */
    if (size < sizeof(subject) - sizeof(CLUSTER_FRAMES_PREFIX)) {
        memcpy(subject, CLUSTER_FRAMES_PREFIX, sizeof(CLUSTER_FRAMES_PREFIX) - 1);
        memcpy(subject + sizeof(CLUSTER_FRAMES_PREFIX) - 1, data, size);
        subject[sizeof(CLUSTER_FRAMES_PREFIX) - 1 + size] = '\0';
        if (cluster_wire_session_id(subject, id) == 0) {
            cluster_wire_subject(id, 0, again);
            if (cluster_wire_session_id(again, subject) != 0 || strcmp(subject, id) != 0)
                abort();
        }
    }
    return 0;
}
