/* log: see log.h.  Formatting and escaping are done on the stack; the only
 * state is the attached sink (one per process: the loop is single-threaded). */
#include "common/log.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/utf8.h"

#define LOG_STR_(x) #x
#define LOG_STR(x)  LOG_STR_(x)
/* Room for "program: level: " and the newline around an escaped message. */
#define LOG_PREFIX_MAX 96
/* The worst case of log_escape is four output bytes per input byte. */
#define LOG_LINE_MAX (LOG_PREFIX_MAX + 4 * LOG_MESSAGE_MAX + 8)

static const char *log_program = "agenthub";
static enum log_level log_min_level = LOG_LEVEL_INFO;

/* The non-blocking sink log_attach sets up. */
static struct {
    int attached;
    int fd;           /* where lines go */
    int owns_fd;      /* fd is our own reopened description */
    int is_socket;    /* write with send(MSG_DONTWAIT) */
    struct event *ev; /* one-shot EV_WRITE, armed while bytes wait */
    size_t used;      /* bytes waiting in buf */
    uint64_t pending; /* lines dropped since the last summary line */
    uint64_t dropped; /* lines dropped since the start */
    char buf[LOG_BUFFER_BYTES];
} log_sink = {.fd = -1};

void log_setup(const char *program, enum log_level min_level)
{
    log_program = program;
    log_min_level = min_level;
}

uint64_t log_dropped_lines(void)
{
    return log_sink.dropped;
}

/* 1 when code point CP must not be printed as it is: a control character,
 * or one that moves text around (line and paragraph separators, the
 * bidirectional marks, embeddings, overrides and isolates). */
static int log_cp_hidden(uint32_t cp)
{
    return utf8_is_control(cp) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t log_escape(const char *in, size_t len, char *out, size_t cap)
{
    const uint8_t *p = (const uint8_t *)in, *end = p + len;
    size_t o = 0;

    if (cap == 0)
        return 0;
    while (p < end) {
        char esc[8];
        size_t n, elen;
        uint32_t cp = 0;

        n = utf8_decode(p, (size_t)(end - p), &cp);
        if (n == 0) {
            snprintf(esc, sizeof(esc), "\\x%02x", *p);
            n = 1;
        } else if (cp == '\\') {
            memcpy(esc, "\\\\", 3);
        } else if (cp == '\n') {
            memcpy(esc, "\\n", 3);
        } else if (cp == '\r') {
            memcpy(esc, "\\r", 3);
        } else if (cp == '\t') {
            memcpy(esc, "\\t", 3);
        } else if (cp < 0x80 && utf8_is_control(cp)) {
            snprintf(esc, sizeof(esc), "\\x%02x", (unsigned)cp);
        } else if (log_cp_hidden(cp)) {
            snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
        } else {
            if (o + n >= cap)
                break;
            memcpy(out + o, p, n);
            o += n;
            p += n;
            continue;
        }
        elen = strlen(esc);
        if (o + elen >= cap)
            break;
        memcpy(out + o, esc, elen);
        o += elen;
        p += n;
    }
    out[o] = '\0';
    return o;
}

/* Copies FMT into OUT (CAP bytes) with a precision of LOG_FIELD_MAX added to
 * every %s that has none, so no one argument can fill a line.  Returns OUT,
 * or FMT itself when the copy does not fit. */
static const char *log_cap_fields(const char *fmt, char *out, size_t cap)
{
    static const char precision[] = "." LOG_STR(LOG_FIELD_MAX);
    const char *p = fmt;
    size_t o = 0;

    while (*p) {
        int has_precision = 0;
        if (o + sizeof(precision) + 2 >= cap)
            return fmt;
        if (*p != '%' || p[1] == '%') {
            if (*p == '%')
                out[o++] = *p++;
            out[o++] = *p++;
            continue;
        }
        out[o++] = *p++;
        /* Flags, width, precision and length modifiers, then the conversion. */
        while (*p && strchr("-+ #0123456789*.'hlLqjzt", *p)) {
            if (*p == '.')
                has_precision = 1;
            if (o + sizeof(precision) + 2 >= cap)
                return fmt;
            out[o++] = *p++;
        }
        if (*p == 's' && !has_precision) {
            memcpy(out + o, precision, sizeof(precision) - 1);
            o += sizeof(precision) - 1;
        }
        if (*p)
            out[o++] = *p++;
    }
    out[o] = '\0';
    return out;
}

/* --- The sink ------------------------------------------------------------ */

/* Writes LEN bytes of LINE to stderr, blocking (before log_attach). */
static void log_write_blocking(const char *line, size_t len)
{
    while (len > 0) {
        ssize_t n = write(STDERR_FILENO, line, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere to write: the line is lost */
        line += n;
        len -= (size_t)n;
    }
}

/* Appends LEN bytes to the buffer when they fit.  Returns 0 or -1. */
static int log_sink_put(const char *line, size_t len)
{
    if (len > sizeof(log_sink.buf) - log_sink.used)
        return -1;
    memcpy(log_sink.buf + log_sink.used, line, len);
    log_sink.used += len;
    return 0;
}

/* Queues the line saying how many lines were dropped, when it fits. */
static void log_sink_put_summary(void)
{
    char line[160];
    int n;

    if (log_sink.pending == 0)
        return;
    n = snprintf(line, sizeof(line),
                 "%s: warn: %llu log line(s) dropped: stderr was not taking them\n", log_program,
                 (unsigned long long)log_sink.pending);
    if (n > 0 && (size_t)n < sizeof(line) && log_sink_put(line, (size_t)n) == 0)
        log_sink.pending = 0;
}

/* Counts every line still buffered as dropped and empties the buffer. */
static void log_sink_discard(void)
{
    for (size_t i = 0; i < log_sink.used; i++)
        if (log_sink.buf[i] == '\n')
            log_sink.dropped++, log_sink.pending++;
    log_sink.used = 0;
}

/* Writes what stderr takes without blocking.  Returns 1 when bytes still
 * wait (stderr is full), else 0. */
static int log_sink_drain(void)
{
    for (;;) {
        ssize_t n;
        if (log_sink.used == 0) {
            log_sink_put_summary();
            if (log_sink.used == 0)
                return 0;
        }
        if (log_sink.is_socket)
            n = send(log_sink.fd, log_sink.buf, log_sink.used, MSG_DONTWAIT | MSG_NOSIGNAL);
        else
            n = write(log_sink.fd, log_sink.buf, log_sink.used);
        if (n > 0) {
            log_sink.used -= (size_t)n;
            memmove(log_sink.buf, log_sink.buf + n, log_sink.used);
            log_sink_put_summary();
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 1;
        /* Nobody will ever read these (the reader went away). */
        log_sink_discard();
        log_sink.pending = 0;
        return 0;
    }
}

/* Drains, and asks the loop to call again when stderr can take more. */
static void log_sink_flush(void)
{
    if (log_sink_drain() && log_sink.ev && !event_pending(log_sink.ev, EV_WRITE, NULL))
        event_add(log_sink.ev, NULL);
}

static void log_on_writable(evutil_socket_t fd, short what, void *arg)
{
    log_sink_flush();
}

static void log_emit(const char *line, size_t len)
{
    if (!log_sink.attached) {
        log_write_blocking(line, len);
        return;
    }
    /* After a drop, lines keep being dropped until stderr takes bytes
     * again and the line saying how many went missing is in place. */
    if (log_sink.pending > 0 || log_sink_put(line, len) != 0) {
        log_sink.dropped++;
        log_sink.pending++;
    }
    log_sink_flush();
}

int log_attach(struct event_base *base)
{
    struct stat st;
    int fd;

    if (log_sink.attached)
        return 0;
    if (fstat(STDERR_FILENO, &st) != 0)
        return -1;
    if (S_ISREG(st.st_mode))
        return 0; /* a file does not stall: keep writing it directly */
    if (S_ISSOCK(st.st_mode)) {
        fd = STDERR_FILENO;
        log_sink.is_socket = 1;
    } else {
        /* A description of our own, so O_NONBLOCK does not reach the
         * processes (and the stdio stream) that share stderr's. */
        fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return -1;
        log_sink.owns_fd = 1;
    }
    log_sink.ev = event_new(base, fd, EV_WRITE, log_on_writable, NULL);
    if (!log_sink.ev) {
        if (log_sink.owns_fd)
            close(fd);
        log_sink.owns_fd = log_sink.is_socket = 0;
        return -1;
    }
    log_sink.fd = fd;
    log_sink.used = 0;
    log_sink.pending = 0;
    log_sink.attached = 1;
    return 0;
}

void log_detach(int timeout_ms)
{
    int64_t deadline = clock_monotonic_ms() + timeout_ms;

    if (!log_sink.attached || !log_sink.ev)
        return;
    while (log_sink_drain()) {
        struct pollfd pfd = {log_sink.fd, POLLOUT, 0};
        int64_t left = deadline - clock_monotonic_ms();
        if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
            break;
    }
    /* Still never blocking from here on: what stderr does not take now
     * waits for the next line's attempt, and is lost at exit. */
    event_free(log_sink.ev);
    log_sink.ev = NULL;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char capped[512], message[LOG_MESSAGE_MAX], line[LOG_LINE_MAX];
    va_list ap;
    int n, prefix;

    if (level < log_min_level)
        return;
    /* Dropping until the loop sees stderr take bytes: do not even format. */
    if (log_sink.attached && log_sink.pending > 0 && log_sink.ev &&
        event_pending(log_sink.ev, EV_WRITE, NULL)) {
        log_sink.dropped++;
        log_sink.pending++;
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(message, sizeof(message), log_cap_fields(fmt, capped, sizeof(capped)), ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(message))
        memcpy(message + sizeof(message) - 4, "...", 4);
    prefix = snprintf(line, LOG_PREFIX_MAX, "%s: %s: ", log_program, names[level]);
    if (prefix < 0 || prefix >= LOG_PREFIX_MAX)
        prefix = 0;
    n = prefix +
        (int)log_escape(message, strlen(message), line + prefix, sizeof(line) - (size_t)prefix - 1);
    line[n++] = '\n';
    log_emit(line, (size_t)n);
}
