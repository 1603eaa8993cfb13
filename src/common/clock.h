/* clock: wall and monotonic time in milliseconds. */
#ifndef AGENTHUB_CLOCK_H
#define AGENTHUB_CLOCK_H

#include <stdint.h>

int64_t clock_unix_ms(void);
int64_t clock_monotonic_ms(void);
uint64_t clock_monotonic_ns(void);

#endif
