#include "common/utf8.h"

size_t utf8_decode(const uint8_t *p, size_t n, uint32_t *cp)
{
    unsigned c = p[0], lo = 0x80, hi = 0xbf;
    size_t len, i;
    uint32_t v;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        v = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        v = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        v = c & 0x07;
    } else {
        return 0; /* a continuation byte, C0/C1 (overlong) or F5..FF */
    }
    if (n < len)
        return 0;
    if (c == 0xe0)
        lo = 0xa0; /* overlong */
    else if (c == 0xed)
        hi = 0x9f; /* surrogates */
    else if (c == 0xf0)
        lo = 0x90; /* overlong */
    else if (c == 0xf4)
        hi = 0x8f; /* above U+10FFFF */
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3f);
    }
    *cp = v;
    return len;
}

int utf8_is_control(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}
