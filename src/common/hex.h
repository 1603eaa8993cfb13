/* hex: hexadecimal digits, read and written in one place (percent-encoded
 * grpc-message, JSON \u escapes, cluster subjects, session ids). */
#ifndef AGENTHUB_COMMON_HEX_H
#define AGENTHUB_COMMON_HEX_H

#include <stddef.h>
#include <stdint.h>

/* The value (0 to 15) of the hexadecimal digit C, either case; -1 when C
 * is not one. */
int hex_value(char c);

/* Writes the LEN bytes at IN as 2 * LEN lowercase digits into OUT, and a
 * NUL after them (OUT holds 2 * LEN + 1). */
void hex_encode(const uint8_t *in, size_t len, char *out);

#endif
