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

size_t base64_decoded_max_length(size_t len)
{
    return len / 4 * 3 + 3;
}

/* The 6-bit value of C under OPTIONS, or -1. */
static int value_of(unsigned char c, enum base64_options options)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || (c == '-' && (options & BASE64_URL_ALPHABET)))
        return 62;
    if (c == '/' || (c == '_' && (options & BASE64_URL_ALPHABET)))
        return 63;
    return -1;
}

enum base64_result base64_decode(const char *in, size_t len, enum base64_options options,
                                 uint8_t *out, size_t *out_len)
{
    uint32_t acc = 0;
    size_t n = 0, pad = 0;
    int bits = 0;

    if (options & BASE64_PADDING_OPTIONAL) {
        while (len > 0 && in[len - 1] == '=')
            len--;
        if (len % 4 == 1) /* six bits cannot make a byte */
            return BASE64_MALFORMED;
    } else {
        while (len > 0 && in[len - 1] == '=' && pad < 2) {
            len--;
            pad++;
        }
        if ((len + pad) % 4 != 0)
            return BASE64_MALFORMED;
    }
    for (size_t i = 0; i < len; i++) {
        int v = value_of((unsigned char)in[i], options);
        if (v < 0)
            return BASE64_MALFORMED;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (uint8_t)(acc >> bits);
        }
    }
    *out_len = n;
    return BASE64_OK;
}

int base64_decode_group(const char group[4], uint8_t out[3])
{
    int v[4];

    for (int i = 0; i < 4; i++)
        v[i] = group[i] == '=' ? 64 : value_of((unsigned char)group[i], BASE64_STRICT);
    /* '=' only in the last two places, and a third-place '=' needs a fourth. */
    if (v[0] >= 64 || v[1] >= 64 || v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
        return -1;
    out[0] = (uint8_t)(v[0] << 2 | v[1] >> 4);
    if (v[2] == 64)
        return v[3] == 64 ? 1 : -1;
    out[1] = (uint8_t)((v[1] & 0xf) << 4 | v[2] >> 2);
    if (v[3] == 64)
        return 2;
    out[2] = (uint8_t)((v[2] & 0x3) << 6 | v[3]);
    return 3;
}
