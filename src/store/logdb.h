/* logdb: the session log's file, an SQLite database of its own in WAL mode
 * (never the ownership store's file).
 *
 * It holds what a single node must not forget across a restart: every
 * session's entries (frames and the marks between them, each with its
 * session seq), the bus's events with their seqs, the bus's instance epoch,
 * and each Runner's run (generation) and highest runner_seq stored.  The
 * hub's durable backend (hub/hub_log_disk.h) decides what goes in; this
 * module only writes a batch of operations in one transaction and reads it
 * back: at start what memory holds, later older frames a reader asks for.
 * docs/durability.md says why SQLite and what each synchronous setting
 * survives.
 *
 * A session's entries of one transaction are one row: their records one
 * after the other in a blob (logdb_entry_header, then the body), with the
 * range of seqs they cover; the bus's events of one transaction likewise
 * (logdb_event_header).  A row per batch rather than per frame keeps the
 * writer's work per frame to copying its bytes.
 *
 * One connection, used by one thread at a time: logdb_open and logdb_load
 * on the caller's, logdb_commit on whichever thread the caller chooses; a
 * second one, on a thread of its own, writes the WAL back into the file
 * (checkpoints) so that no commit waits for that fsync; a third, read-only,
 * serves logdb_read on one thread at a time (any one), beside commits.
 * No connection is ever used by two threads at once, so each is opened
 * without SQLite's own mutex. */
#ifndef AGENTHUB_STORE_LOGDB_H
#define AGENTHUB_STORE_LOGDB_H

#include <stddef.h>
#include <stdint.h>

struct logdb;

enum logdb_rc {
    LOGDB_OK = 0,
    LOGDB_FULL = 1,     /* the disk (or the file system's quota) is full */
    LOGDB_READONLY = 2, /* the file or its directory cannot be written */
    LOGDB_IO = 3,       /* the operating system failed a read or write */
    LOGDB_CORRUPT = 4,  /* the file is damaged */
    LOGDB_FOREIGN = 5,  /* the file is not an agenthub session log */
    LOGDB_NOMEM = 6,
};

/* What one operation of a batch does. */
enum logdb_op_kind {
    LOGDB_OP_SESSION = 0,  /* session SID is named DATA[0..LEN) */
    LOGDB_OP_ENTRY = 1,    /* SID's entry: KIND, SEQ, AT, DATA */
    LOGDB_OP_TRIM = 2,     /* SID's entries below SEQ go */
    LOGDB_OP_DROP = 3,     /* SID and all its entries go */
    LOGDB_OP_BUS = 4,      /* bus event SEQ: AT, DATA */
    LOGDB_OP_BUS_TRIM = 5, /* bus events below SEQ go */
    LOGDB_OP_RUNNER = 6,   /* Runner DATA[0..LEN): generation SEQ, mark AUX */
    LOGDB_OP_CHUNK = 7,    /* SID's chunk from SEQ: AUX bytes, the newest at AT */
    LOGDB_OP_ENTRIES = 8,  /* SID's entries SEQ..AUX, records in DATA; MARKS of them are
                              marks, the first at MARK_SEQ */
    LOGDB_OP_EVENTS = 9,   /* bus events SEQ..AUX, records in DATA */
};

struct logdb_op {
    uint8_t op;   /* enum logdb_op_kind */
    uint8_t kind; /* an entry's kind: 0 a frame, else the caller's mark */
    uint64_t sid;
    uint64_t seq;
    uint64_t aux;
    int64_t at_unix_ms;
    const void *data;
    size_t len;
    uint32_t marks;    /* LOGDB_OP_ENTRIES */
    uint64_t mark_seq; /* LOGDB_OP_ENTRIES with MARKS */
};

/* The most bytes a record's header takes. */
#define LOGDB_HEADER_MAX 32

/* Writes at OUT the header of a session's entry of KIND at SEQ, taken at
 * AT, whose LEN bytes follow it in an LOGDB_OP_ENTRIES blob.  Returns the
 * header's length (at most LOGDB_HEADER_MAX). */
size_t logdb_entry_header(uint8_t *out, uint8_t kind, uint64_t seq, int64_t at, size_t len);
/* The same for a bus event at SEQ in an LOGDB_OP_EVENTS blob. */
size_t logdb_event_header(uint8_t *out, uint64_t seq, int64_t at, size_t len);

/* How a commit reaches the disk. */
enum logdb_sync {
    LOGDB_SYNC_NORMAL = 0, /* no fsync per commit: survives a killed process */
    LOGDB_SYNC_FULL = 1,   /* fsync per commit: survives a lost machine */
};

/* Opens (or creates) the log at PATH.  A new file gets instance epoch
 * NEW_EPOCH; *EPOCH is the file's.  Returns LOGDB_OK with *OUT set, or
 * another code with ERR saying what is wrong (a file that is not an
 * SQLite database or not an agenthub log, a damaged one, one that cannot
 * be created or written). */
enum logdb_rc logdb_open(const char *path, enum logdb_sync sync, uint64_t new_epoch,
                         struct logdb **out, uint64_t *epoch, char *err, size_t errlen);
void logdb_close(struct logdb *db);

/* Called by logdb_load with ARG for each row, in this order: every
 * session, every Runner, every chunk (by session, then first seq), each
 * session's newest mark (the order of marks: ORD), every bus event (by
 * seq); and by logdb_load_session for a session's entries.  A callback
 * returning nonzero stops the load (LOGDB_NOMEM). */
struct logdb_load_fns {
    int (*session)(void *arg, uint64_t sid, const char *name, size_t len);
    int (*runner)(void *arg, const char *name, size_t len, uint64_t generation, uint64_t mark);
    int (*chunk)(void *arg, uint64_t sid, uint64_t first_seq, uint64_t bytes, int64_t newest_at);
    int (*last_mark)(void *arg, uint64_t sid, uint64_t ord);
    int (*entry)(void *arg, uint64_t sid, uint8_t kind, uint64_t seq, int64_t at_unix_ms,
                 const void *data, size_t len);
    int (*bus)(void *arg, uint64_t seq, int64_t at_unix_ms, const void *data, size_t len);
};

/* Reads back everything but the sessions' entries.  Returns LOGDB_OK, or
 * another code with ERR (a damaged file says so). */
enum logdb_rc logdb_load(struct logdb *db, const struct logdb_load_fns *fns, void *arg, char *err,
                         size_t errlen);
/* Reads back session SID's entries from FROM_SEQ on, in the order they
 * were written, after its newest mark below FROM_SEQ (which says whether
 * its tail was over).  Returns as logdb_load. */
enum logdb_rc logdb_load_session(struct logdb *db, uint64_t sid, uint64_t from_seq,
                                 const struct logdb_load_fns *fns, void *arg, char *err,
                                 size_t errlen);

/* Hands ROW the committed frames of session SID after AFTER_SEQ, in seq
 * order, until about MAX_BYTES (at least one frame, when there is one).
 * For the reading thread only.  Returns LOGDB_OK, LOGDB_NOMEM when ROW
 * returned nonzero, or another code with ERR. */
enum logdb_rc logdb_read(struct logdb *db, uint64_t sid, uint64_t after_seq, size_t max_bytes,
                         int (*row)(void *arg, uint64_t seq, int64_t at_unix_ms, const void *data,
                                    size_t len),
                         void *arg, char *err, size_t errlen);

/* Writes OPS[0..N) in one transaction: all or nothing.  Returns LOGDB_OK,
 * or another code with ERR (nothing of the batch is stored; it may be
 * written again). */
enum logdb_rc logdb_commit(struct logdb *db, const struct logdb_op *ops, size_t n, char *err,
                           size_t errlen);

/* Checkpoints (the WAL written back into the file by the log's own
 * checkpointing thread, an fsync each) done so far, and fsyncs of commits
 * under LOGDB_SYNC_FULL.  Any thread may ask. */
uint64_t logdb_fsyncs(struct logdb *db);

/* The bytes the log's files (database and WAL) take on disk now. */
uint64_t logdb_disk_bytes(const char *path);

/* What CODE means, for messages. */
const char *logdb_rc_name(enum logdb_rc code);

#endif
