/* hub_log_disk: session logs and the bus of a single node, kept on disk
 * (store/logdb.h: an SQLite file of their own, in WAL mode) so a restart,
 * clean or not, loses nothing the server acknowledged.
 *
 * Memory stays what readers are served from: each session's core ring and
 * the core bus, with their bounds.  Every append, mark, bus event and
 * Runner reset is first taken into a pending batch on the event loop; the
 * batch of one loop turn (or of --log-commit-ms) goes to a thread that
 * writes it in one transaction, and only once it is committed are its
 * frames put in the rings and its events on the bus, so subscribers only
 * ever see committed entries and a seq a client saw names the same bytes
 * after a crash.  A producer waiting for its frames (hub_log_wait) is
 * answered then, and a Runner's mark (hub_log_runner_mark) is the highest
 * runner_seq committed in its run, written in the same transaction.  While
 * one batch is being committed the next one gathers: that is the group
 * commit.
 *
 * At start the file is read back: every session's entries (in the order
 * they were written, so tails and ends come back as they were, ended logs
 * with the retention they had left), the bus with its seqs and instance
 * epoch, the Runners' marks; of each session only the newest frames memory
 * would hold.  The disk keeps more than memory: each session's frames
 * within its own bounds (bytes per session, bytes in all, age), never less
 * than its ring holds, and a reader behind a ring is served the older
 * frames from disk by a reading thread, then the ring's (hub_log_read
 * answers RING_NONE meanwhile and the session's watchers are woken when
 * they are in).  The bus keeps what memory keeps.
 *
 * A commit that fails (disk full, unwritable, I/O error) is kept and tried
 * again every second; meanwhile appends and publishes are refused
 * (hub_log_writable is 0), waiting producers hear UNAVAILABLE, and
 * hub_log_disk_fault says why.  It recovers by itself. */
#ifndef AGENTHUB_HUB_LOG_DISK_H
#define AGENTHUB_HUB_LOG_DISK_H

#include "hub/hub_log.h"
#include "store/logdb.h"

struct event_base;
struct hub_log_disk;

struct hub_log_disk_config {
    const char *path;
    enum logdb_sync sync;
    uint32_t commit_ms;     /* gather a batch this long (0: one loop turn) */
    size_t pending_bytes;   /* past this much uncommitted, appends are refused */
    size_t memory_bytes;    /* what a session's ring holds: read back at start */
    uint64_t session_bytes; /* a session's frames on disk, at most (about) */
    uint64_t budget_bytes;  /* every session's frames on disk, at most (about) */
    uint64_t age_ms;        /* frames older than this leave the disk (0: kept) */
};

/* Makes LOG the durable implementation over REG's sessions and BUS, after
 * reading the file back into them.  Returns the backend (free with
 * hub_log_disk_free after every user is gone), or NULL with ERR saying
 * what is wrong with the file (*RC its class). */
struct hub_log_disk *hub_log_disk_open(struct hub_log *log, struct event_base *base,
                                       struct session_registry *reg, struct bus *bus,
                                       const struct hub_log_disk_config *config, enum logdb_rc *rc,
                                       char *err, size_t errlen);
/* Commits what is still pending, then frees D. */
void hub_log_disk_free(struct hub_log_disk *d);

/* Why the log takes no appends now (the disk's last error), or NULL. */
const char *hub_log_disk_fault(const struct hub_log_disk *d);

/* Called with ARG each time hub_log_writable changes; FN NULL removes it.
 * Runs on the event loop. */
void hub_log_disk_on_state(struct hub_log_disk *d, void (*fn)(void *arg), void *arg);

#endif
