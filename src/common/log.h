/* log: one-line diagnostics on stderr, prefixed with the program name.
 * Never log tokens, SQL text or pointers. */
#ifndef AGENTHUB_LOG_H
#define AGENTHUB_LOG_H

enum log_level { LOG_LEVEL_DEBUG = 0, LOG_LEVEL_INFO = 1, LOG_LEVEL_WARN = 2, LOG_LEVEL_ERROR = 3 };

/* Sets the program name printed before each line and the lowest level shown. */
void log_setup(const char *program, enum log_level min_level);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)

#endif
