/* base64: see base64.h. */
#include "common/base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void base64_encode_group(const uint8_t *in, size_t n, char out[4])
{
    uint32_t v = (uint32_t)in[0] << 16 | (n > 1 ? (uint32_t)in[1] << 8 : 0) | (n > 2 ? in[2] : 0);

    out[0] = alphabet[v >> 18 & 63];
    out[1] = alphabet[v >> 12 & 63];
    out[2] = n > 1 ? alphabet[v >> 6 & 63] : '=';
    out[3] = n > 2 ? alphabet[v & 63] : '=';
}

size_t base64_encoded_length(size_t len)
{
    return (len + 2) / 3 * 4;
}

size_t base64_encode(const uint8_t *in, size_t len, char *out, size_t out_size)
{
    size_t need = base64_encoded_length(len);
    size_t n = 0;

    if (need + 1 > out_size)
        return need;
    for (size_t i = 0; i < len; i += 3, n += 4)
        base64_encode_group(in + i, len - i < 3 ? len - i : 3, out + n);
    out[n] = '\0';
    return n;
}
