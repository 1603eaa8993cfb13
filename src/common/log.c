#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>

static const char *log_program = "agenthub";
static enum log_level log_min_level = LOG_LEVEL_INFO;

void log_setup(const char *program, enum log_level min_level)
{
    log_program = program;
    log_min_level = min_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char line[1024];
    va_list ap;

    if (level < log_min_level)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    /* One fprintf per line so lines from one process never interleave. */
    fprintf(stderr, "%s: %s: %s\n", log_program, names[level], line);
}
