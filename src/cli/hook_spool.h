/* hook_spool: where the hook shim keeps the ops it could not deliver yet.
 *
 * A spool at path P is a set of append-only segment files next to P:
 *   P              the open segment.  A hook appends all its ops (one JSON
 *                  object per line, hook_map.h) in one O_APPEND write while
 *                  holding a shared flock on the file.
 *   P.<seq>-<off>  sealed segments, delivered oldest <seq> first; the bytes
 *                  before <off> were delivered (or dropped for the cap).
 *   P.lock         the delivery lock: one hook at a time seals, delivers and
 *                  drops.
 *   P.dropped      how many ops the cap dropped that were not yet reported.
 *
 * Sealing renames P to the next P.<seq>-0, then takes an exclusive flock on
 * it, which waits for an append already under way; an appender that finds P
 * renamed under it retries on the new P.  Delivery moves <off> forward by a
 * rename after each call the server acknowledged, and unlinks the segment at
 * its end.  Nothing a hook appended is rewritten or lost to a kill: a hook
 * killed at any point leaves every acknowledged op on disk.  The cap keeps
 * the pending bytes under max_bytes by dropping whole lines from the oldest
 * segment first, never the op being appended, and counts them. */
#ifndef AGENTHUB_CLI_HOOK_SPOOL_H
#define AGENTHUB_CLI_HOOK_SPOOL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The default cap on pending bytes (AGENTHUB_SPOOL_MAX_BYTES). */
#define HOOK_SPOOL_MAX_BYTES (64ull << 20)
/* The open segment is sealed once it holds this much (at most): a sealed
 * segment is what the cap can drop from. */
#define HOOK_SPOOL_SEGMENT_MAX (1u << 20)
/* One delivery window: the ops read from a segment at a time. */
#define HOOK_SPOOL_WINDOW (512u << 10)

struct hook_spool {
    char path[4096];
    char dir[4096];
    const char *base; /* P's file name, inside path */
    uint64_t max_bytes;
    uint64_t segment_bytes;
    int lock_fd; /* P.lock while the delivery lock is held, else -1 */
    /* Where this process's last append went (0 when none). */
    dev_t appended_dev;
    ino_t appended_ino;
};

/* A sealed segment opened for delivery (exclusively flocked). */
struct hook_spool_segment {
    int fd;
    uint64_t seq;
    uint64_t offset; /* delivered (or dropped) up to here */
    uint64_t size;
};

/* Ops read from a segment: OPS[i] is an object whose line ends at ENDS[i];
 * END is where the window ends (lines that are not ops included). */
struct hook_spool_window {
    json_t *ops;
    uint64_t *ends;
    uint64_t end;
};

/* Sets SP up for the spool at PATH with MAX_BYTES as the cap (0: the
 * default).  Returns 0, or -1 when PATH is unusable. */
int hook_spool_init(struct hook_spool *sp, const char *path, uint64_t max_bytes);

/* Releases the delivery lock when held. */
void hook_spool_close(struct hook_spool *sp);

/* Takes the delivery lock, polling until DEADLINE_MS (monotonic).  With
 * WATCH, gives up early once this process's last append is no longer in the
 * open segment (the holder sealed it: it delivers it).  Returns 0 when held,
 * 1 when given up, -1 when the lock file cannot be opened. */
int hook_spool_lock(struct hook_spool *sp, uint64_t deadline_ms, int watch);
void hook_spool_unlock(struct hook_spool *sp);

/* Appends LEN bytes of complete lines to the open segment in one write.
 * Returns 0 once they are on disk, -1 when they could not be written by
 * DEADLINE_MS. */
int hook_spool_append(struct hook_spool *sp, const char *lines, size_t len, uint64_t deadline_ms);

/* The rest need the delivery lock. */

/* Seals the open segment when it holds at least AT_LEAST bytes (1: when it
 * holds anything).  Returns 1 when sealed, 0 when not, -1 on an error. */
int hook_spool_seal(struct hook_spool *sp, uint64_t at_least, uint64_t deadline_ms);

/* Drops the oldest pending lines until the pending bytes plus INCOMING fit
 * the cap, adding them to P.dropped.  Returns the ops dropped, or -1 on an
 * error. */
long hook_spool_enforce_cap(struct hook_spool *sp, uint64_t incoming, uint64_t deadline_ms);

/* Opens the oldest sealed segment.  Returns 1 with *SEG filled, 0 when
 * there is none, -1 on an error or when it cannot be locked by DEADLINE_MS. */
int hook_spool_oldest(struct hook_spool *sp, struct hook_spool_segment *seg, uint64_t deadline_ms);

/* Reads the next window of SEG from seg->offset.  Returns 0 with *WIN
 * filled (free it with hook_spool_window_free; WIN->end == seg->size at the
 * end), or -1 on a read error. */
int hook_spool_read(const struct hook_spool_segment *seg, struct hook_spool_window *win);
void hook_spool_window_free(struct hook_spool_window *win);

/* Records that SEG is delivered up to OFFSET (unlinks it at its end).
 * Returns 0, or -1 when the rename failed (the bytes will be sent again). */
int hook_spool_advance(struct hook_spool *sp, struct hook_spool_segment *seg, uint64_t offset);
void hook_spool_segment_close(struct hook_spool_segment *seg);

/* Ops dropped and not yet reported. */
uint64_t hook_spool_dropped(const struct hook_spool *sp);
/* Subtracts N reported ops from the count.  Returns 0 or -1. */
int hook_spool_reported(struct hook_spool *sp, uint64_t n);

#endif
