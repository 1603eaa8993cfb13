/* bench/log_engines: what the session log's writes cost on its engine
 * (store/logdb.c: SQLite in WAL mode, with its checkpointing thread, exactly
 * as agenthubd writes) against LMDB (liblmdb) doing the same writes.
 *
 * The load is agenthubd's: a transaction per batch of frames of 217 bytes
 * (a 200-byte payload's AgentSessionFrame), holding one row of the batch's
 * frame records and one row of as many bus events of 208 bytes (the event
 * a frame becomes repeats its text), and the Runner's mark; past 64 MiB of
 * frames the oldest rows go with every batch (retention).  First with a
 * fixed number of frames per commit, then with frames arriving at a rate
 * and each commit taking what arrived meanwhile (group commit).  Prints
 * the frames per commit, the CPU of the whole process (every thread, the
 * checkpointer's included) and the wall time per frame, and each LMDB
 * mode's CPU against logdb's in the same row.
 *
 * LMDB's modes: NOSYNC (no fsync: a killed process loses nothing, a lost
 * machine can damage the file), NOMETASYNC (an fsync of the data per
 * commit: a lost machine may undo the last commit) and its default (two
 * fsyncs per commit).  docs/durability.md reads these figures.
 *
 *   build/bench/log_engines [DIR] [FRAMES]   (DIR: a scratch directory on
 *   the disk to measure, default a new one under /tmp; FRAMES 400000) */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/clock.h"
#include "store/logdb.h"

#define FRAME_BYTES 217
#define EVENT_BYTES 208
#define KEEP_BYTES  ((size_t)64 << 20)

/* The most frames one commit takes. */
#define BATCH_MAX 4096

struct load {
    long frames;
    long batch;             /* frames per commit, or 0: as many as arrived meanwhile */
    double rate;            /* with batch 0: frames arriving per second */
    uint8_t *rows, *events; /* BATCH_MAX records each, as logdb takes them */
    size_t rows_end[BATCH_MAX + 1], events_end[BATCH_MAX + 1]; /* [n]: n records' bytes */
    uint64_t start_ns;                                         /* when the first frame arrived */
    long taken;                                                /* frames committed so far */
};

struct figure {
    double cpu_us, wall_us; /* per frame */
    double per_commit;      /* frames */
};

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Makes LOAD of FRAMES frames, BATCH per commit (0: paced at RATE per
 * second, each commit taking what arrived since the one before), its two
 * blobs of BATCH_MAX records each (headers as logdb writes them, bodies
 * of varied bytes).  Returns 0, or -1 when memory is short. */
static int load_init(struct load *load, long frames, long batch, double rate)
{
    uint8_t body[FRAME_BYTES];

    memset(load, 0, sizeof(*load));
    load->frames = frames;
    load->batch = batch;
    load->rate = rate;
    load->rows = malloc((size_t)BATCH_MAX * (FRAME_BYTES + LOGDB_HEADER_MAX));
    load->events = malloc((size_t)BATCH_MAX * (EVENT_BYTES + LOGDB_HEADER_MAX));
    if (!load->rows || !load->events)
        return -1;
    for (size_t i = 0; i < sizeof(body); i++)
        body[i] = (uint8_t)(i * 31 + 7);
    for (long i = 0; i < BATCH_MAX; i++) {
        int64_t at = 1764800000000 + i;
        size_t r = load->rows_end[i], e = load->events_end[i];
        r += logdb_entry_header(load->rows + r, 0, (uint64_t)i + 1, at, FRAME_BYTES);
        memcpy(load->rows + r, body, FRAME_BYTES);
        load->rows_end[i + 1] = r + FRAME_BYTES;
        e += logdb_event_header(load->events + e, (uint64_t)i + 1, at, EVENT_BYTES);
        memcpy(load->events + e, body, EVENT_BYTES);
        load->events_end[i + 1] = e + EVENT_BYTES;
    }
    return 0;
}

/* The frames the next commit takes: BATCH, or those that arrived by now
 * (waiting for the next one when none has); 0 once all are taken. */
static long load_next(struct load *load)
{
    long n;

    if (load->taken >= load->frames)
        return 0;
    if (load->batch) {
        n = load->batch;
    } else {
        if (load->taken == 0)
            load->start_ns = clock_monotonic_ns();
        for (;;) {
            double arrived = (double)(clock_monotonic_ns() - load->start_ns) / 1e9 * load->rate;
            n = (long)arrived + 1 - load->taken;
            if (n > 0)
                break;
            usleep((useconds_t)(1e6 / load->rate) + 1);
        }
        if (n > BATCH_MAX)
            n = BATCH_MAX;
    }
    if (n > load->frames - load->taken)
        n = load->frames - load->taken;
    load->taken += n;
    return n;
}

/* With retention: the first seq kept once the newest is LAST (the oldest
 * 64 MiB of frames and events stay). */
static uint64_t load_keep(uint64_t last)
{
    uint64_t frames = KEEP_BYTES / (FRAME_BYTES + EVENT_BYTES + 8);

    return last > frames ? last - frames + 1 : 1;
}

static void load_free(struct load *load)
{
    free(load->rows);
    free(load->events);
}

static void remove_files(const char *dir)
{
    static const char *const names[] = {"log.db", "log.db-wal", "log.db-shm", "data.mdb",
                                        "lock.mdb"};
    char path[4096];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
}

/* The load through logdb.  Returns 0, or -1 with a message printed. */
static int run_logdb(const char *dir, struct load *load, struct figure *out)
{
    char path[4096], err[256];
    struct logdb *db;
    uint64_t epoch;
    enum logdb_rc rc;
    double cpu0;
    uint64_t t0;
    long commits;

    load->taken = 0;
    remove_files(dir);
    snprintf(path, sizeof(path), "%s/log.db", dir);
    rc = logdb_open(path, LOGDB_SYNC_NORMAL, 1, &db, &epoch, err, sizeof(err));
    if (rc == LOGDB_OK) {
        struct logdb_op name = {.op = LOGDB_OP_SESSION, .sid = 1, .data = "sess-1", .len = 6};
        rc = logdb_commit(db, &name, 1, err, sizeof(err));
    }
    if (rc != LOGDB_OK) {
        fprintf(stderr, "log_engines: %s: %s\n", path, err);
        return -1;
    }
    cpu0 = cpu_seconds();
    t0 = clock_monotonic_ns();
    commits = 0;
    for (long frames; (frames = load_next(load)) > 0; commits++) {
        uint64_t last = (uint64_t)load->taken, first = last - (uint64_t)frames + 1;
        struct logdb_op ops[5] = {
            {.op = LOGDB_OP_ENTRIES,
             .sid = 1,
             .seq = first,
             .aux = last,
             .data = load->rows,
             .len = load->rows_end[frames]},
            {.op = LOGDB_OP_EVENTS,
             .seq = first,
             .aux = last,
             .data = load->events,
             .len = load->events_end[frames]},
            {.op = LOGDB_OP_RUNNER, .seq = 1, .aux = last, .data = "runner-1", .len = 8},
        };
        size_t n = 3;
        if (load_keep(last) > 1) {
            ops[n++] = (struct logdb_op){.op = LOGDB_OP_TRIM, .sid = 1, .seq = load_keep(last)};
            ops[n++] = (struct logdb_op){.op = LOGDB_OP_BUS_TRIM, .seq = load_keep(last)};
        }
        if ((rc = logdb_commit(db, ops, n, err, sizeof(err))) != LOGDB_OK) {
            fprintf(stderr, "log_engines: commit: %s\n", err);
            logdb_close(db);
            return -1;
        }
    }
    out->cpu_us = (cpu_seconds() - cpu0) * 1e6 / (double)load->frames;
    out->wall_us = (double)(clock_monotonic_ns() - t0) / 1e3 / (double)load->frames;
    out->per_commit = (double)load->frames / (double)commits;
    logdb_close(db); /* the checkpointer's last pass is not counted */
    return 0;
}

static int lmdb_fail(int rc, const char *what)
{
    fprintf(stderr, "log_engines: lmdb %s: %s\n", what, mdb_strerror(rc));
    return -1;
}

/* Puts LEN bytes of DATA under KEY in DBI (written in place: MDB_RESERVE).
 * Returns an LMDB code. */
static int lmdb_put(MDB_txn *txn, MDB_dbi dbi, void *key, size_t klen, const void *data, size_t len)
{
    MDB_val k = {klen, key}, v = {len, NULL};
    int rc = mdb_put(txn, dbi, &k, &v, MDB_RESERVE);

    if (rc == 0)
        memcpy(v.mv_data, data, len);
    return rc;
}

/* Deletes the rows of ENTRIES and BUS whose first seq is below KEEP (as
 * logdb's retention, which keeps a row straddling KEEP).  Returns an LMDB
 * code. */
static int lmdb_trim(MDB_txn *txn, MDB_dbi entries, MDB_dbi bus, uint64_t keep)
{
    MDB_dbi dbis[2] = {entries, bus};
    int rc = 0;

    for (int i = 0; i < 2 && rc == 0; i++) {
        MDB_cursor *c;
        MDB_val k, v;
        if ((rc = mdb_cursor_open(txn, dbis[i], &c)) != 0)
            break;
        while ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) == 0) {
            uint64_t first;
            memcpy(&first, (uint8_t *)k.mv_data + k.mv_size - 8, 8);
            if (__builtin_bswap64(first) >= keep)
                break;
            /* The next row holds the seqs after it: keep a row that
             * straddles KEEP, as logdb does. */
            MDB_val nk, nv;
            if ((rc = mdb_cursor_get(c, &nk, &nv, MDB_NEXT)) != 0)
                break;
            memcpy(&first, (uint8_t *)nk.mv_data + nk.mv_size - 8, 8);
            if (__builtin_bswap64(first) > keep ||
                (rc = mdb_cursor_get(c, &k, &v, MDB_PREV)) != 0 || (rc = mdb_cursor_del(c, 0)) != 0)
                break;
        }
        mdb_cursor_close(c);
        if (rc == MDB_NOTFOUND)
            rc = 0;
    }
    return rc;
}

/* The same load through LMDB opened with FLAGS: the entries and the bus in
 * databases of their own, keyed by big-endian seqs.  Returns 0, or -1 with
 * a message printed. */
static int run_lmdb(const char *dir, unsigned flags, struct load *load, struct figure *out)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi entries, bus, runners;
    double cpu0;
    uint64_t t0;
    long commits = 0;
    int rc;

    load->taken = 0;
    remove_files(dir);
    if ((rc = mdb_env_create(&env)) != 0)
        return lmdb_fail(rc, "env");
    if ((rc = mdb_env_set_mapsize(env, (size_t)4 << 30)) != 0 ||
        (rc = mdb_env_set_maxdbs(env, 4)) != 0 || (rc = mdb_env_open(env, dir, flags, 0644)) != 0 ||
        (rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0) {
        mdb_env_close(env);
        return lmdb_fail(rc, "open");
    }
    if ((rc = mdb_dbi_open(txn, "entries", MDB_CREATE, &entries)) != 0 ||
        (rc = mdb_dbi_open(txn, "bus", MDB_CREATE, &bus)) != 0 ||
        (rc = mdb_dbi_open(txn, "runners", MDB_CREATE, &runners)) != 0 ||
        (rc = mdb_txn_commit(txn)) != 0) {
        mdb_env_close(env);
        return lmdb_fail(rc, "databases");
    }
    cpu0 = cpu_seconds();
    t0 = clock_monotonic_ns();
    for (long frames; rc == 0 && (frames = load_next(load)) > 0; commits++) {
        uint64_t last = (uint64_t)load->taken, first = last - (uint64_t)frames + 1;
        uint64_t key[2] = {__builtin_bswap64(1), __builtin_bswap64(first)};
        if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) != 0)
            break;
        rc = lmdb_put(txn, entries, key, sizeof(key), load->rows, load->rows_end[frames]);
        if (rc == 0)
            rc =
                lmdb_put(txn, bus, &key[1], sizeof(key[1]), load->events, load->events_end[frames]);
        if (rc == 0)
            rc = lmdb_put(txn, runners, "runner-1", 8, &last, sizeof(last));
        if (rc == 0)
            rc = lmdb_trim(txn, entries, bus, load_keep(last));
        if (rc == 0)
            rc = mdb_txn_commit(txn);
        else
            mdb_txn_abort(txn);
    }
    out->cpu_us = (cpu_seconds() - cpu0) * 1e6 / (double)load->frames;
    out->wall_us = (double)(clock_monotonic_ns() - t0) / 1e3 / (double)load->frames;
    out->per_commit = (double)load->frames / (double)(commits ? commits : 1);
    mdb_env_close(env);
    return rc == 0 ? 0 : lmdb_fail(rc, "commit");
}

/* One row of the table: LOAD through logdb, then through each LMDB mode.
 * Returns 0, or -1 when a run failed. */
static int row(const char *dir, const char *label, struct load *load)
{
    static const struct {
        const char *name;
        unsigned flags;
    } modes[] = {
        {"LMDB NOSYNC", MDB_NOSYNC},
        {"LMDB NOMETASYNC", MDB_NOMETASYNC},
        {"LMDB default", 0},
    };
    struct figure base, f;

    if (run_logdb(dir, load, &base) != 0)
        return -1;
    printf("%-14s %-16s %9.1f %12.3f %12.3f %8s\n", label, "logdb (SQLite)", base.per_commit,
           base.cpu_us, base.wall_us, "1.00");
    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        if (run_lmdb(dir, modes[m].flags, load, &f) != 0)
            return -1;
        printf("%-14s %-16s %9.1f %12.3f %12.3f %8.2f\n", label, modes[m].name, f.per_commit,
               f.cpu_us, f.wall_us, f.cpu_us / base.cpu_us);
    }
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    static const long batches[] = {1, 16, 256, 1024};
    static const double rates[] = {1000, 50000, 200000};
    char made[] = "/tmp/log_engines.XXXXXX";
    const char *dir = argc > 1 ? argv[1] : mkdtemp(made);
    long frames = argc > 2 ? atol(argv[2]) : 400000;
    struct load load;
    char label[32];
    int failed = 0;

    if (!dir || frames <= 0) {
        fprintf(stderr, "usage: log_engines [DIR] [FRAMES]\n");
        return 2;
    }
    printf("%-14s %-16s %9s %12s %12s %8s\n", "load", "engine", "per commit", "CPU us/frame",
           "wall us/frame", "CPU vs");
    for (size_t i = 0; i < sizeof(batches) / sizeof(batches[0]) && !failed; i++) {
        /* Commits of one frame are slow with fsyncs: fewer of them. */
        if (load_init(&load, batches[i] == 1 ? frames / 20 : frames, batches[i], 0) != 0) {
            fprintf(stderr, "log_engines: out of memory\n");
            return 1;
        }
        snprintf(label, sizeof(label), "batch %ld", batches[i]);
        failed = row(dir, label, &load) != 0;
        load_free(&load);
    }
    /* Frames arriving at a rate, each commit taking what came meanwhile
     * (the group commit agenthubd's writer does): 2 s of each. */
    for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]) && !failed; i++) {
        if (load_init(&load, (long)(rates[i] * 2), 0, rates[i]) != 0) {
            fprintf(stderr, "log_engines: out of memory\n");
            return 1;
        }
        snprintf(label, sizeof(label), "%.0f/s", rates[i]);
        failed = row(dir, label, &load) != 0;
        load_free(&load);
    }
    remove_files(dir);
    if (dir == made)
        rmdir(made);
    return failed ? 1 : 0;
}
