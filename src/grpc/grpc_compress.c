/* grpc_compress: see grpc_compress.h. */
#include "grpc/grpc_compress.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* zlib's windowBits: 15 is a zlib stream (gRPC's "deflate" is RFC 1950, as
 * gRPC C-core and grpc-js send it), 15 + 16 a gzip stream. */
static int window_bits(enum grpc_encoding encoding)
{
    return encoding == GRPC_ENCODING_GZIP ? 15 + 16 : 15;
}

enum grpc_encoding grpc_encoding_parse(const char *name, size_t len)
{
    if (len == 8 && memcmp(name, "identity", 8) == 0)
        return GRPC_ENCODING_IDENTITY;
    if (len == 4 && memcmp(name, "gzip", 4) == 0)
        return GRPC_ENCODING_GZIP;
    if (len == 7 && memcmp(name, "deflate", 7) == 0)
        return GRPC_ENCODING_DEFLATE;
    return GRPC_ENCODING_UNSUPPORTED;
}

const char *grpc_encoding_name(enum grpc_encoding encoding)
{
    switch (encoding) {
    case GRPC_ENCODING_GZIP:
        return "gzip";
    case GRPC_ENCODING_DEFLATE:
        return "deflate";
    case GRPC_ENCODING_IDENTITY:
    case GRPC_ENCODING_UNSUPPORTED:
        break;
    }
    return "identity";
}

unsigned grpc_accept_encoding_parse(const char *value, size_t len)
{
    unsigned set = GRPC_ENCODING_BIT(GRPC_ENCODING_IDENTITY);
    size_t start = 0;

    while (start <= len) {
        size_t end = start;
        while (end < len && value[end] != ',')
            end++;
        size_t a = start, b = end;
        while (a < b && (value[a] == ' ' || value[a] == '\t'))
            a++;
        while (b > a && (value[b - 1] == ' ' || value[b - 1] == '\t'))
            b--;
        enum grpc_encoding encoding = grpc_encoding_parse(value + a, b - a);
        if (encoding != GRPC_ENCODING_UNSUPPORTED)
            set |= GRPC_ENCODING_BIT(encoding);
        start = end + 1;
    }
    return set;
}

enum grpc_inflate_result grpc_inflate(enum grpc_encoding encoding, const uint8_t *in, size_t in_len,
                                      size_t limit, uint8_t **out, size_t *out_len)
{
    z_stream z;
    uint8_t *buf = NULL;
    size_t cap = 0, have = 0;
    int rv = GRPC_INFLATE_CORRUPT, zrv;
    uint8_t probe;

    *out = NULL;
    *out_len = 0;
    if (encoding != GRPC_ENCODING_GZIP && encoding != GRPC_ENCODING_DEFLATE)
        return GRPC_INFLATE_CORRUPT;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, window_bits(encoding)) != Z_OK)
        return GRPC_INFLATE_NO_MEMORY;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)in_len;
    if (in_len > UINT32_MAX) /* a message length is 32 bits: cannot happen */
        goto cleanup;
    for (;;) {
        if (have == cap) {
            /* Grow geometrically, never past the limit; at the limit, one
             * probe byte tells whether the stream wants more. */
            if (cap == limit) {
                do {
                    z.next_out = &probe;
                    z.avail_out = 1;
                    zrv = inflate(&z, Z_NO_FLUSH);
                } while (zrv == Z_OK && z.avail_out == 1);
                if (zrv == Z_STREAM_END && z.avail_out == 1)
                    break;
                rv = z.avail_out == 0 ? GRPC_INFLATE_TOO_LARGE : GRPC_INFLATE_CORRUPT;
                goto cleanup;
            }
            size_t next = cap ? cap * 2 : (in_len * 4 > 256 ? in_len * 4 : 256);
            if (next > limit || next < cap)
                next = limit;
            uint8_t *grown = realloc(buf, next);
            if (!grown) {
                rv = GRPC_INFLATE_NO_MEMORY;
                goto cleanup;
            }
            buf = grown;
            cap = next;
        }
        size_t room = cap - have;
        z.next_out = buf + have;
        z.avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
        uInt before = z.avail_out;
        zrv = inflate(&z, Z_NO_FLUSH);
        have += before - z.avail_out;
        if (zrv == Z_STREAM_END)
            break;
        if (zrv == Z_BUF_ERROR && z.avail_in == 0)
            goto cleanup; /* the input ended inside the stream */
        if (zrv != Z_OK && zrv != Z_BUF_ERROR) {
            rv = zrv == Z_MEM_ERROR ? GRPC_INFLATE_NO_MEMORY : GRPC_INFLATE_CORRUPT;
            goto cleanup;
        }
    }
    if (z.avail_in != 0) /* bytes after the end of the stream */
        goto cleanup;
    inflateEnd(&z);
    if (have == 0) {
        free(buf);
        buf = NULL;
    }
    *out = buf;
    *out_len = have;
    return GRPC_INFLATE_OK;

cleanup:
    inflateEnd(&z);
    free(buf);
    return rv;
}

int grpc_deflate(enum grpc_encoding encoding, const uint8_t *in, size_t in_len, uint8_t **out,
                 size_t *out_len)
{
    z_stream z;
    uint8_t *buf;
    uLong bound;
    int zrv;

    *out = NULL;
    *out_len = 0;
    memset(&z, 0, sizeof(z));
    if (in_len > UINT32_MAX || deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                                            window_bits(encoding), 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    bound = deflateBound(&z, (uLong)in_len);
    buf = malloc(bound ? bound : 1);
    if (!buf) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)in_len;
    z.next_out = buf;
    z.avail_out = (uInt)bound;
    zrv = deflate(&z, Z_FINISH);
    *out_len = bound - z.avail_out;
    deflateEnd(&z);
    if (zrv != Z_STREAM_END) {
        free(buf);
        *out_len = 0;
        return -1;
    }
    *out = buf;
    return 0;
}
