/* log: one-line diagnostics on stderr, prefixed with the program name.
 *
 * A client can put any bytes into a field that ends up in a log line (a
 * Runner's version, an agent's output), so every line is made safe here, in
 * one place: each %s argument is cut at LOG_FIELD_MAX bytes (unless the
 * format gives a precision of its own), and the whole formatted line is
 * escaped (log_escape), so one call always writes exactly one line.
 *
 * Lines are written to stderr at once, blocking, until a program attaches
 * its event loop with log_attach: from then on stderr is written without
 * ever blocking, through a bounded buffer the loop drains; a line that does
 * not fit is dropped and counted, and once stderr takes bytes again a line
 * says how many were dropped.
 *
 * Never log tokens, SQL text or pointers. */
#ifndef AGENTHUB_LOG_H
#define AGENTHUB_LOG_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

enum log_level { LOG_LEVEL_DEBUG = 0, LOG_LEVEL_INFO = 1, LOG_LEVEL_WARN = 2, LOG_LEVEL_ERROR = 3 };

/* The longest a single %s argument may be in a line (bytes, before escaping). */
#define LOG_FIELD_MAX 256
/* The longest formatted message (bytes, before escaping); longer ones end in "...". */
#define LOG_MESSAGE_MAX 2048
/* What log_attach buffers for a stderr that does not take bytes. */
#define LOG_BUFFER_BYTES (64 * 1024)

/* Sets the program name printed before each line and the lowest level shown. */
void log_setup(const char *program, enum log_level min_level);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

/* Writes IN[0..LEN) into OUT (CAP bytes, NUL-terminated) so that it reads as
 * one line of UTF-8 text that says only what IN says: backslash becomes \\,
 * newline, carriage return and tab \n \r \t, other control characters and
 * bytes that are not well-formed UTF-8 \xNN, and the C1 controls, the
 * Unicode line and paragraph separators and the bidirectional controls
 * \uNNNN.  Stops before an escape that would not fit.  Returns the length
 * written. */
size_t log_escape(const char *in, size_t len, char *out, size_t cap);

/* Writes stderr without blocking from now on: lines wait in a buffer of
 * LOG_BUFFER_BYTES that BASE drains when stderr can take them.  stderr's own
 * file description is left blocking (other writers share it): a pipe or a
 * terminal is reopened through /proc/self/fd/2, a socket is written with
 * MSG_DONTWAIT, and a regular file is written directly (it does not stall).
 * Returns 0, or -1 when stderr cannot be reopened (lines stay blocking). */
int log_attach(struct event_base *base);

/* Lets go of the event base (call it before freeing it): waits at most
 * TIMEOUT_MS for stderr to take what is buffered.  Later lines still never
 * block: each is written as far as stderr takes it, what stays behind waits
 * for the next line, and whatever is left at exit is lost. */
void log_detach(int timeout_ms);

/* Lines dropped because stderr did not take them, since the start. */
uint64_t log_dropped_lines(void);

#endif
