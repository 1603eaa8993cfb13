/* utf8: strict UTF-8 decoding (RFC 3629) for the places that must not trust
 * bytes a client sent: the log line escaper and the request string check. */
#ifndef AGENTHUB_UTF8_H
#define AGENTHUB_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the sequence at P (N bytes available, N > 0).  Returns its length
 * (1 to 4) with the code point in *CP, or 0 when the bytes there are not
 * well-formed: a stray continuation byte, an overlong form, a surrogate,
 * anything above U+10FFFF, or a sequence cut short by N. */
size_t utf8_decode(const uint8_t *p, size_t n, uint32_t *cp);

/* 1 when CP is a control character: C0 (U+0000..U+001F), DEL (U+007F) or
 * C1 (U+0080..U+009F), which terminals may act on (U+009B is CSI). */
int utf8_is_control(uint32_t cp);

#endif
