/* hook_spool: append-only spool segments (see hook_spool.h). */
#include "cli/hook_spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"

#define SPOOL_POLL_MS  5
#define SPOOL_NAME_MAX 4400
/* Bytes read at a time when skipping or counting lines. */
#define SPOOL_CHUNK (64u << 10)

struct segment_name {
    uint64_t seq;
    uint64_t offset;
};

static void pause_ms(unsigned ms)
{
    struct timespec pause = {0, (long)ms * 1000 * 1000};
    nanosleep(&pause, NULL);
}

/* flock(OP) on FD, polling until DEADLINE_MS.  Returns 0 or -1. */
static int flock_until(int fd, int op, uint64_t deadline_ms)
{
    for (;;) {
        if (flock(fd, op | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if (cli_now_ms() >= deadline_ms)
            return -1;
        pause_ms(SPOOL_POLL_MS);
    }
}

int hook_spool_init(struct hook_spool *sp, const char *path, uint64_t max_bytes)
{
    size_t len = strlen(path);
    const char *slash = strrchr(path, '/');

    memset(sp, 0, sizeof(*sp));
    sp->lock_fd = -1;
    if (len == 0 || len >= sizeof(sp->path) || (slash && slash[1] == '\0'))
        return -1;
    memcpy(sp->path, path, len + 1);
    if (!slash) {
        snprintf(sp->dir, sizeof(sp->dir), ".");
        sp->base = sp->path;
    } else {
        size_t dir_len = slash == path ? 1 : (size_t)(slash - path);
        memcpy(sp->dir, path, dir_len);
        sp->dir[dir_len] = '\0';
        sp->base = sp->path + (slash - path) + 1;
    }
    sp->max_bytes = max_bytes ? max_bytes : HOOK_SPOOL_MAX_BYTES;
    /* Small enough that the cap drops from sealed segments, large enough
     * that a busy spool stays a handful of files. */
    sp->segment_bytes = sp->max_bytes / 16;
    if (sp->segment_bytes < 4096)
        sp->segment_bytes = 4096;
    if (sp->segment_bytes > HOOK_SPOOL_SEGMENT_MAX)
        sp->segment_bytes = HOOK_SPOOL_SEGMENT_MAX;
    return 0;
}

void hook_spool_close(struct hook_spool *sp)
{
    hook_spool_unlock(sp);
}

/* P with SUFFIX appended ("" for P itself). */
static void side_path(const struct hook_spool *sp, const char *suffix, char *out, size_t size)
{
    snprintf(out, size, "%s%s", sp->path, suffix);
}

static void segment_path(const struct hook_spool *sp, uint64_t seq, uint64_t offset, char *out,
                         size_t size)
{
    snprintf(out, size, "%s.%llu-%llu", sp->path, (unsigned long long)seq,
             (unsigned long long)offset);
}

int hook_spool_lock(struct hook_spool *sp, uint64_t deadline_ms, int watch)
{
    char path[SPOOL_NAME_MAX];

    if (sp->lock_fd >= 0)
        return 0;
    side_path(sp, ".lock", path, sizeof(path));
    sp->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (sp->lock_fd < 0)
        return -1;
    for (;;) {
        struct stat st;
        if (flock(sp->lock_fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if ((errno != EWOULDBLOCK && errno != EINTR) || cli_now_ms() >= deadline_ms)
            break;
        /* The holder sealed what we appended: it is delivering it. */
        if (watch && sp->appended_ino &&
            (stat(sp->path, &st) != 0 || st.st_ino != sp->appended_ino ||
             st.st_dev != sp->appended_dev))
            break;
        pause_ms(SPOOL_POLL_MS);
    }
    close(sp->lock_fd);
    sp->lock_fd = -1;
    return 1;
}

void hook_spool_unlock(struct hook_spool *sp)
{
    if (sp->lock_fd >= 0)
        close(sp->lock_fd); /* releases the flock */
    sp->lock_fd = -1;
}

/* Writes all of BUF.  Returns 0 or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int hook_spool_append(struct hook_spool *sp, const char *lines, size_t len, uint64_t deadline_ms)
{
    char *buf = malloc(len + 1);
    int attempts, rv = -1;

    if (!buf)
        return -1;
    /* buf[0] ends a line a killed writer left unfinished, when there is one. */
    buf[0] = '\n';
    memcpy(buf + 1, lines, len);
    for (attempts = 0; attempts < 100; attempts++) {
        struct stat held, named;
        char last = '\n';
        int fd = open(sp->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            break;
        if (flock_until(fd, LOCK_SH, deadline_ms) != 0) {
            close(fd);
            break;
        }
        if (fstat(fd, &held) != 0 || stat(sp->path, &named) != 0 || held.st_ino != named.st_ino ||
            held.st_dev != named.st_dev) {
            close(fd); /* sealed between open and flock: append to the new one */
            continue;
        }
        if (held.st_size > 0 && pread(fd, &last, 1, held.st_size - 1) != 1)
            last = '\n';
        rv = last == '\n' ? write_all(fd, buf + 1, len) : write_all(fd, buf, len + 1);
        if (rv == 0) {
            sp->appended_dev = held.st_dev;
            sp->appended_ino = held.st_ino;
        }
        close(fd);
        break;
    }
    free(buf);
    return rv;
}

/* The sealed segments, sorted oldest first.  Returns the count (*OUT
 * malloc'd, may be NULL when 0), or -1. */
static long list_segments(const struct hook_spool *sp, struct segment_name **out)
{
    size_t base_len = strlen(sp->base), count = 0, cap = 0;
    struct segment_name *names = NULL;
    struct dirent *entry;
    DIR *dir = opendir(sp->dir);

    *out = NULL;
    if (!dir)
        return -1;
    while ((entry = readdir(dir)) != NULL) {
        const char *name = entry->d_name, *p;
        char *end;
        struct segment_name seg;
        if (strncmp(name, sp->base, base_len) != 0 || name[base_len] != '.')
            continue;
        p = name + base_len + 1;
        if (*p < '0' || *p > '9')
            continue;
        seg.seq = strtoull(p, &end, 10);
        if (*end != '-' || end[1] < '0' || end[1] > '9')
            continue;
        seg.offset = strtoull(end + 1, &end, 10);
        if (*end != '\0')
            continue;
        if (count == cap) {
            size_t grown = cap ? cap * 2 : 16;
            struct segment_name *more = realloc(names, grown * sizeof(*names));
            if (!more) {
                free(names);
                closedir(dir);
                return -1;
            }
            names = more;
            cap = grown;
        }
        names[count++] = seg;
    }
    closedir(dir);
    /* Few entries: insertion sort by seq. */
    for (size_t i = 1; i < count; i++) {
        struct segment_name key = names[i];
        size_t j = i;
        while (j > 0 && names[j - 1].seq > key.seq) {
            names[j] = names[j - 1];
            j--;
        }
        names[j] = key;
    }
    *out = names;
    return (long)count;
}

int hook_spool_seal(struct hook_spool *sp, uint64_t at_least, uint64_t deadline_ms)
{
    char sealed[SPOOL_NAME_MAX];
    struct segment_name *names;
    struct stat st;
    uint64_t next = 1;
    long count;
    int fd = open(sp->path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    if (fstat(fd, &st) != 0 || st.st_size == 0 || (uint64_t)st.st_size < at_least) {
        close(fd);
        return 0;
    }
    count = list_segments(sp, &names);
    if (count < 0) {
        close(fd);
        return -1;
    }
    if (count > 0)
        next = names[count - 1].seq + 1;
    free(names);
    segment_path(sp, next, 0, sealed, sizeof(sealed));
    if (rename(sp->path, sealed) != 0) {
        close(fd);
        return -1;
    }
    /* An append under way holds a shared lock: once we hold it exclusively
     * every append to this file is complete.  Readers lock it again. */
    flock_until(fd, LOCK_EX, deadline_ms);
    close(fd);
    return 1;
}

/* Opens segment NAME and locks it exclusively.  Returns 0 or -1. */
static int segment_open(const struct hook_spool *sp, const struct segment_name *name,
                        struct hook_spool_segment *seg, uint64_t deadline_ms)
{
    char path[SPOOL_NAME_MAX];
    struct stat st;

    segment_path(sp, name->seq, name->offset, path, sizeof(path));
    seg->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (seg->fd < 0)
        return -1;
    if (flock_until(seg->fd, LOCK_EX, deadline_ms) != 0 || fstat(seg->fd, &st) != 0) {
        close(seg->fd);
        seg->fd = -1;
        return -1;
    }
    seg->seq = name->seq;
    seg->offset = name->offset;
    seg->size = (uint64_t)st.st_size;
    return 0;
}

void hook_spool_segment_close(struct hook_spool_segment *seg)
{
    if (seg->fd >= 0)
        close(seg->fd);
    seg->fd = -1;
}

int hook_spool_oldest(struct hook_spool *sp, struct hook_spool_segment *seg, uint64_t deadline_ms)
{
    struct segment_name *names;
    long count = list_segments(sp, &names);
    int rv;

    seg->fd = -1;
    if (count <= 0)
        return count < 0 ? -1 : 0;
    rv = segment_open(sp, &names[0], seg, deadline_ms) == 0 ? 1 : -1;
    free(names);
    return rv;
}

int hook_spool_advance(struct hook_spool *sp, struct hook_spool_segment *seg, uint64_t offset)
{
    char from[SPOOL_NAME_MAX], to[SPOOL_NAME_MAX];

    if (offset <= seg->offset)
        return 0;
    segment_path(sp, seg->seq, seg->offset, from, sizeof(from));
    if (offset >= seg->size) {
        if (unlink(from) != 0)
            return -1;
    } else {
        segment_path(sp, seg->seq, offset, to, sizeof(to));
        if (rename(from, to) != 0)
            return -1;
    }
    seg->offset = offset;
    return 0;
}

/* Reads up to LEN bytes at OFFSET.  Returns the count, or -1. */
static ssize_t read_at(int fd, char *buf, size_t len, uint64_t offset)
{
    size_t got = 0;

    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(offset + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

/* Walks SEG's lines from FROM until at least WANT bytes are covered (a line
 * is never cut).  Returns the offset reached, *LINES the non-empty lines
 * passed, or -1 on a read error. */
static int64_t skip_lines(const struct hook_spool_segment *seg, uint64_t from, uint64_t want,
                          uint64_t *lines)
{
    char *buf = malloc(SPOOL_CHUNK);
    uint64_t at = from, line_start = from;
    int64_t rv = -1;

    *lines = 0;
    if (!buf)
        return -1;
    while (at < seg->size) {
        size_t want_now = seg->size - at < SPOOL_CHUNK ? (size_t)(seg->size - at) : SPOOL_CHUNK;
        ssize_t n = read_at(seg->fd, buf, want_now, at);
        if (n <= 0)
            goto out;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n')
                continue;
            if (at + (uint64_t)i > line_start)
                (*lines)++;
            line_start = at + (uint64_t)i + 1;
            if (line_start - from >= want) {
                rv = (int64_t)line_start;
                goto out;
            }
        }
        at += (uint64_t)n;
    }
    if (seg->size > line_start) /* an unfinished last line */
        (*lines)++;
    rv = (int64_t)seg->size;
out:
    free(buf);
    return rv;
}

int hook_spool_read(const struct hook_spool_segment *seg, struct hook_spool_window *win)
{
    uint64_t avail = seg->size > seg->offset ? seg->size - seg->offset : 0;
    size_t want = avail < HOOK_SPOOL_WINDOW ? (size_t)avail : HOOK_SPOOL_WINDOW;
    size_t complete = 0, lines = 0, start = 0, k = 0;
    char *buf;
    ssize_t n;

    memset(win, 0, sizeof(*win));
    win->end = seg->offset;
    win->ops = json_array();
    if (!win->ops)
        return -1;
    if (want == 0)
        return 0;
    buf = malloc(want);
    if (!buf)
        return -1;
    n = read_at(seg->fd, buf, want, seg->offset);
    if (n <= 0) {
        free(buf);
        return -1;
    }
    for (size_t i = 0; i < (size_t)n; i++)
        if (buf[i] == '\n') {
            complete = i + 1;
            lines++;
        }
    if (seg->offset + (uint64_t)n == seg->size && complete < (size_t)n) {
        complete = (size_t)n; /* the segment ends in an unfinished line */
        lines++;
    }
    if (complete == 0) {
        /* One line longer than a window: no op is that long, skip it. */
        uint64_t skipped;
        int64_t end = skip_lines(seg, seg->offset, 1, &skipped);
        free(buf);
        if (end < 0)
            return -1;
        win->end = (uint64_t)end;
        return 0;
    }
    win->ends = malloc(lines * sizeof(*win->ends));
    if (!win->ends) {
        free(buf);
        return -1;
    }
    while (start < complete) {
        char *nl = memchr(buf + start, '\n', complete - start);
        size_t stop = nl ? (size_t)(nl - buf) : complete;
        size_t next = nl ? stop + 1 : complete;
        json_t *op = stop > start ? json_loadb(buf + start, stop - start, 0, NULL) : NULL;
        if (json_is_object(op)) {
            win->ends[k++] = seg->offset + next;
            json_array_append_new(win->ops, op);
        } else {
            json_decref(op); /* not an op: passed over with the window */
        }
        start = next;
    }
    win->end = seg->offset + complete;
    free(buf);
    return 0;
}

void hook_spool_window_free(struct hook_spool_window *win)
{
    json_decref(win->ops);
    free(win->ends);
    memset(win, 0, sizeof(*win));
}

uint64_t hook_spool_dropped(const struct hook_spool *sp)
{
    char path[SPOOL_NAME_MAX], text[32];
    ssize_t n;
    int fd;

    side_path(sp, ".dropped", path, sizeof(path));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    return strtoull(text, NULL, 10);
}

/* Replaces P.dropped with VALUE (removes it at 0).  Returns 0 or -1. */
static int dropped_write(const struct hook_spool *sp, uint64_t value)
{
    char path[SPOOL_NAME_MAX], tmp[SPOOL_NAME_MAX], text[32];
    int fd, rv;

    side_path(sp, ".dropped", path, sizeof(path));
    if (value == 0)
        return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
    side_path(sp, ".dropped.tmp", tmp, sizeof(tmp));
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    snprintf(text, sizeof(text), "%llu\n", (unsigned long long)value);
    rv = write_all(fd, text, strlen(text));
    close(fd);
    if (rv == 0)
        rv = rename(tmp, path);
    return rv;
}

int hook_spool_reported(struct hook_spool *sp, uint64_t n)
{
    uint64_t count = hook_spool_dropped(sp);

    return dropped_write(sp, count > n ? count - n : 0);
}

long hook_spool_enforce_cap(struct hook_spool *sp, uint64_t incoming, uint64_t deadline_ms)
{
    struct segment_name *names = NULL;
    uint64_t pending = incoming, sealed = 0, excess, dropped = 0;
    struct stat st;
    long count, i;

    if (stat(sp->path, &st) == 0)
        pending += (uint64_t)st.st_size;
    count = list_segments(sp, &names);
    if (count < 0)
        return -1;
    for (i = 0; i < count; i++) {
        char path[SPOOL_NAME_MAX];
        segment_path(sp, names[i].seq, names[i].offset, path, sizeof(path));
        if (stat(path, &st) == 0 && (uint64_t)st.st_size > names[i].offset)
            sealed += (uint64_t)st.st_size - names[i].offset;
    }
    pending += sealed;
    if (pending <= sp->max_bytes) {
        free(names);
        return 0;
    }
    excess = pending - sp->max_bytes;
    if (sealed < excess) {
        /* The open segment holds the oldest bytes left to drop: seal it so
         * it can be dropped from; the ops about to be appended go after. */
        free(names);
        if (hook_spool_seal(sp, 1, deadline_ms) < 0)
            return -1;
        count = list_segments(sp, &names);
        if (count < 0)
            return -1;
    }
    for (i = 0; i < count && excess > 0; i++) {
        struct hook_spool_segment seg;
        uint64_t lines;
        int64_t end;
        if (segment_open(sp, &names[i], &seg, deadline_ms) != 0)
            break;
        end = skip_lines(&seg, seg.offset, excess, &lines);
        if (end < 0 || hook_spool_advance(sp, &seg, (uint64_t)end) != 0) {
            hook_spool_segment_close(&seg);
            break;
        }
        excess -=
            (uint64_t)end - names[i].offset < excess ? (uint64_t)end - names[i].offset : excess;
        dropped += lines;
        hook_spool_segment_close(&seg);
    }
    free(names);
    if (dropped > 0 && dropped_write(sp, hook_spool_dropped(sp) + dropped) != 0)
        return -1;
    return (long)dropped;
}
