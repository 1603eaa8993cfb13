/* hub_log_disk internals shared by the durable backend's files:
 * hub_log_disk.c (the hub_log operations, applying committed entries,
 * loading at start, metrics), hub_log_disk_writer.c (batches and their
 * rows, the committing thread, faults, producers waiting),
 * hub_log_disk_reader.c (reads behind a ring) and hub_log_disk_retain.c
 * (retention on disk).  Not for other modules: they use hub_log_disk.h. */
#ifndef AGENTHUB_HUB_LOG_DISK_INTERNAL_H
#define AGENTHUB_HUB_LOG_DISK_INTERNAL_H

#include <event2/event.h>
#include <pthread.h>
#include <stdint.h>

#include "common/hash_map.h"
#include "core/session.h"
#include "hub/hub_log.h"
#include "hub/hub_log_disk.h"
#include "store/logdb.h"
#include "store/store.h"

/* Entry kinds on disk: 0 a frame, else an enum hub_log_mark + 1. */
#define DSK_KIND_FRAME 0
/* An operation of the batch that writes nothing itself: a Runner's
 * runner_seq dealt with without a frame (its mark is written with the
 * batch's marks). */
#define DSK_OP_DEALT 0xff
/* How long a producer waits for its frames to be committed before it hears
 * UNAVAILABLE (a disk that hangs rather than fails). */
#define DSK_WAIT_MS 10000
/* A batch the disk refused is written again this often until it goes. */
#define DSK_RETRY_MS 1000

/* A session's row of a batch holds about this many bytes at most; past it
 * the batch has another row of it. */
#define DSK_ROW_BYTES (1u << 20)
/* Blobs of committed rows kept for the next batches' rows (at most this
 * many, of at most DSK_SPARE_BYTES in all): a batch's bytes go into memory
 * that is already there instead of memory grown and faulted in again. */
#define DSK_SPARE_ROWS  1024
#define DSK_SPARE_BYTES (16u << 20)

/* How much older frames a reader gets from disk per read. */
#define DSK_READ_BYTES (256u << 10)
/* A window of older frames nobody read for this long is freed. */
#define DSK_COLD_IDLE_MS 2000
/* A session's frames on disk are counted in chunks of a fourth of the
 * smaller of its ring and its disk bound (at least 64 KiB): retention
 * gives up a whole chunk, the oldest. */
#define DSK_CHUNK_PARTS     4u
#define DSK_CHUNK_MIN_BYTES (64u << 10)

/* Frames of a session on disk from FIRST_SEQ up to the next chunk's. */
struct dsk_chunk {
    uint64_t first_seq;
    uint64_t bytes;
    int64_t newest_at;
};

/* Older frames of a session read from disk for its readers: those after
 * AFTER up to LAST (none: LAST == AFTER, the disk had nothing there). */
struct dsk_cold {
    uint64_t after, last;
    size_t n;
    struct ring_entry *entries; /* data points into the block after them */
    int64_t used_ms;
};

/* What the backend knows of a session's log on disk. */
struct dsk_session {
    struct hash_map_node by_id;
    struct hash_map_node by_sid;
    struct dsk_session *fetch_next; /* waiting for the reading thread */
    uint64_t sid;                   /* its key on disk */
    uint64_t last_seq;              /* the seq its newest entry took, committed or not */
    uint64_t trimmed;               /* entries below this seq are gone from the disk */
    uint64_t pending;               /* operations of it not yet applied */
    int64_t over_unix_ms;           /* loading: when its tail was last over */
    uint64_t mark_ord;              /* loading: the order of its newest mark */
    struct dsk_chunk *chunks;       /* oldest first */
    uint32_t nchunks, chunks_cap;
    uint64_t disk_bytes; /* its frames' bytes on disk (the chunks') */
    uint64_t row_batch;  /* the pending batch's id when it has a row of E's ... */
    uint32_t row;        /* ... at this index */
    uint8_t fetching;    /* a read of FETCH_AFTER is asked or under way */
    uint64_t fetch_after;
    struct dsk_cold *cold;
    uint16_t len;
    char id[];
};

/* A Runner's run and its highest runner_seq committed in it. */
struct dsk_runner {
    struct hash_map_node by_id;
    uint64_t generation;
    uint64_t mark;
    uint64_t batch_mark; /* while a batch is made: the highest in it */
    uint8_t in_batch;
    uint16_t len;
    char id[];
};

/* One operation taken on the event loop, with what applying it needs. */
struct dsk_op {
    /* op.data is owned (malloc), except for an entry or a bus event: their
     * bytes are in the batch's row for them (PART, or the events') at AT */
    struct logdb_op op;
    struct dsk_session *session;
    struct dsk_runner *runner; /* a frame's origin, or the Runner of a reset */
    uint64_t runner_seq, generation;
    uint64_t ord;
    uint32_t part;
    size_t at;
};

/* One row of a batch: a session's entries (or the bus's events) in it,
 * their records one after the other as logdb writes them. */
struct dsk_row {
    struct dsk_session *session; /* NULL: the bus's */
    uint8_t *blob;
    size_t len, cap;
    uint64_t first_seq, last_seq, mark_seq;
    uint32_t n, marks;
};

struct dsk_batch {
    uint64_t id; /* the pending batch's, to find a session's row in it */
    struct dsk_op *ops;
    size_t n, cap;
    size_t bytes;
    uint32_t frames;
    struct dsk_row *rows; /* each session's entries in it, in order of their first */
    uint32_t nrows, rows_cap;
    struct dsk_row events;
    struct logdb_op *flat; /* what the thread writes: ops, rows, then the Runners' marks */
    size_t nflat;
    uint64_t last_ord;
};

struct hub_log_disk {
    struct event_base *base;
    struct session_registry *reg;
    struct bus *bus;
    struct logdb *db;
    char *path;
    struct hub_log_disk_config config;
    struct hash_map by_id;   /* struct dsk_session by session id */
    struct hash_map by_sid;  /* the same by sid */
    struct hash_map runners; /* struct dsk_runner by Runner id */
    uint64_t sessions, next_sid;
    uint64_t epoch;
    uint64_t bus_last;    /* the seq the newest event took, committed or not */
    uint64_t bus_trimmed; /* events below this seq are gone from the disk */
    struct dsk_runner *origin;
    uint64_t origin_seq;
    uint32_t origin_taken; /* frames taken since the origin was last set */
    /* the event loop's side of the writer */
    struct dsk_batch pending;   /* taken, not yet handed to the thread */
    struct dsk_batch *inflight; /* the thread's, or refused and kept for a retry */
    uint64_t ord;               /* the last operation taken */
    uint64_t batches;           /* batches made, the pending one's id */
    struct dsk_spare {
        uint8_t *blob;
        size_t cap;
    } spare[DSK_SPARE_ROWS];
    uint32_t nspare;
    size_t spare_bytes;
    struct dsk_op *spare_ops; /* a committed batch's arrays, for the next */
    size_t spare_ops_cap;
    struct dsk_row *spare_rows;
    uint32_t spare_rows_cap;
    uint64_t committed_ord; /* every operation up to this one is committed */
    struct list_node waits; /* struct hub_log_wait, the newest first */
    struct event *flush_timer, *retry_timer, *wait_timer, *gc_timer, *done_event;
    int flush_armed;
    enum logdb_rc fault; /* LOGDB_OK while commits go */
    char fault_msg[512];
    int was_writable;
    void (*state_fn)(void *arg);
    void *state_arg;
    /* the thread */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int thread_started, quit;
    struct dsk_batch *job;
    int job_done;
    enum logdb_rc job_rc;
    char job_err[256];
    uint64_t job_ns, job_fsyncs;
    int pipe_fds[2];
    /* metrics */
    uint64_t commits, commit_ns_sum, commit_ns_max, commit_buckets[12];
    uint64_t frames_committed, bytes_committed, events_committed;
    uint64_t faults, waits_failed, bus_lost, fsyncs;
    uint64_t frames_loaded, events_loaded, load_ms;
    uint64_t disk_bytes; /* every session's frames on disk (the chunks') */
    uint64_t frames_read, reads, read_faults, trims;
    /* the reading thread: older frames for readers behind a ring */
    struct dsk_session *fetch_head, **fetch_tail; /* asked, not yet handed over */
    pthread_t reader;
    pthread_mutex_t read_mu;
    pthread_cond_t read_cv;
    int reader_started, reader_quit;
    uint64_t read_sid, read_after; /* the thread's job, while READ_BUSY */
    int read_busy, read_done;
    enum logdb_rc read_rc;
    char read_err[256];
    struct dsk_cold *read_result;
    struct dsk_session *read_session;
    int read_pipe[2];
    struct event *read_event;
};

/* --- hub_log_disk.c ---------------------------------------------------------- */

/* Applies a committed (or loaded) entry to session ID's core ring: a frame
 * appended at SEQ, or a mark.  LOADING: read back at start (a state frame
 * sets the session's state). */
void hub_log_disk_apply_entry(struct hub_log_disk *d, struct dsk_session *e, uint8_t kind,
                              uint64_t seq, const void *data, size_t len, int64_t at, int loading);
int hub_log_disk_writable(void *impl);
/* Tells the state listener when hub_log_disk_writable changed. */
void hub_log_disk_state_changed(struct hub_log_disk *d);

struct dsk_session *hub_log_disk_find(struct hub_log_disk *d, const char *id, size_t len);
/* The first session of D's walk, or NULL; with hub_log_disk_after, every
 * one once.  The walker may remove the one it stands on once it has the
 * next. */
struct dsk_session *hub_log_disk_first(const struct hub_log_disk *d);
struct dsk_session *hub_log_disk_after(const struct hub_log_disk *d, const struct dsk_session *e);
/* Counts a frame of LEN bytes at SEQ, taken at AT, in E's chunks (a new
 * one past the chunk size, whose predecessor's row is written then).
 * Returns 0, or -1 when memory is short. */
int hub_log_disk_count_frame(struct hub_log_disk *d, struct dsk_session *e, uint64_t seq,
                             size_t len, int64_t at);

/* E leaves the backend (the disk forgets it by an LOGDB_OP_DROP taken
 * before). */
void hub_log_disk_remove(struct hub_log_disk *d, struct dsk_session *e);
/* E's oldest chunk is no longer counted. */
void hub_log_disk_chunk_drop(struct hub_log_disk *d, struct dsk_session *e);

/* --- hub_log_disk_retain.c ---------------------------------------------------- */

/* The once-a-second timer: retention on disk, and the windows of older
 * frames nobody reads. */
void hub_log_disk_gc(evutil_socket_t fd, short what, void *arg);

/* --- hub_log_disk_reader.c ---------------------------------------------------- */

/* The read operations of struct hub_log_ops: the rings, then the disk. */
enum ring_status hub_log_disk_read(void *impl, struct session *s, uint64_t after_seq,
                                   struct ring_entry *out);
enum ring_status hub_log_disk_check(void *impl, struct session *s, uint64_t after_seq);
uint64_t hub_log_disk_tail(void *impl, struct session *s, uint64_t n);
void hub_log_disk_span(void *impl, struct session *s, struct hub_log_span *out);
/* Starts the reading thread.  Returns 0, or -1 with ERR. */
int hub_log_disk_reader_start(struct hub_log_disk *d, char *err, size_t errlen);
void hub_log_disk_reader_stop(struct hub_log_disk *d);
/* Frees windows of older frames nobody read lately (NOW_MS 0: all). */
void hub_log_disk_cold_expire(struct hub_log_disk *d, int64_t now_ms);
/* E leaves: it is taken out of the reading thread's queue. */
void hub_log_disk_reader_forget(struct hub_log_disk *d, struct dsk_session *e);

/* --- hub_log_disk_writer.c ---------------------------------------------------- */

/* Takes one operation into the pending batch (copying DATA) and arms the
 * flush.  Returns it, or NULL when memory is short (nothing taken). */
struct dsk_op *hub_log_disk_take(struct hub_log_disk *d, uint8_t op, struct dsk_session *e,
                                 uint8_t kind, uint64_t seq, int64_t at, const void *data,
                                 size_t len);
/* Starts FN(ARG) on *THREAD with every signal blocked (signals are the
 * event loop's).  Returns 0, or pthread_create's error. */
int hub_log_disk_spawn(pthread_t *thread, void *(*fn)(void *), void *arg);
/* Starts the committing thread and the loop's events.  Returns 0, or -1
 * with ERR. */
int hub_log_disk_writer_start(struct hub_log_disk *d, char *err, size_t errlen);
/* Commits what is left (on this thread) and stops the thread. */
void hub_log_disk_writer_stop(struct hub_log_disk *d);
void hub_log_disk_batch_clear(struct dsk_batch *b);
/* Frees the blobs kept for later rows. */
void hub_log_disk_spares_free(struct hub_log_disk *d);
/* The wait operations of struct hub_log_ops. */
void hub_log_disk_track(void *impl, struct session *s, struct hub_log_wait *w, uint64_t seq);
int hub_log_disk_stored(void *impl, struct session *s, struct hub_log_wait *w);
void hub_log_disk_wait(void *impl, struct session *s, struct hub_log_wait *w);

#endif
