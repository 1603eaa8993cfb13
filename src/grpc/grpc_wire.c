#include "grpc/grpc_wire.h"

#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/byte_queue.h"
#include "common/hex.h"

static const char *const status_names[GRPC_STATUS_COUNT] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *grpc_status_name(int status)
{
    if (status < 0 || status >= GRPC_STATUS_COUNT)
        return "UNKNOWN";
    return status_names[status];
}

int grpc_status_from_name(const char *name)
{
    for (int i = 0; i < GRPC_STATUS_COUNT; i++)
        if (strcmp(status_names[i], name) == 0)
            return i;
    return -1;
}

void grpc_frame_header(uint8_t out[GRPC_FRAME_HEADER_LEN], uint32_t len)
{
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

uint8_t *grpc_frame_reserve(struct byte_queue *queue, size_t len)
{
    uint8_t *at;

    if (len > UINT32_MAX)
        return NULL;
    at = byte_queue_reserve(queue, GRPC_FRAME_HEADER_LEN + len);
    if (!at)
        return NULL;
    grpc_frame_header(at, (uint32_t)len);
    return at + GRPC_FRAME_HEADER_LEN;
}

int grpc_frame_append(struct byte_queue *queue, const uint8_t *body, size_t len, int compressed)
{
    uint8_t *at = grpc_frame_reserve(queue, len);

    if (!at)
        return -1;
    at[-GRPC_FRAME_HEADER_LEN] = compressed ? 1 : 0;
    if (len)
        memcpy(at, body, len);
    return 0;
}

void grpc_reader_init(struct grpc_reader *reader, size_t max_len)
{
    memset(reader, 0, sizeof(*reader));
    reader->max_len = max_len;
}

void grpc_reader_free(struct grpc_reader *reader)
{
    free(reader->body);
    reader->body = NULL;
}

enum grpc_reader_result grpc_reader_feed(struct grpc_reader *reader, const uint8_t *data,
                                         size_t len, size_t *consumed)
{
    size_t used = 0;

    *consumed = 0;
    if (reader->message_ready)
        return GRPC_READER_MESSAGE;
    while (used < len) {
        if (reader->header_have < GRPC_FRAME_HEADER_LEN) {
            size_t want = GRPC_FRAME_HEADER_LEN - reader->header_have;
            size_t take = len - used < want ? len - used : want;
            memcpy(reader->header + reader->header_have, data + used, take);
            reader->header_have += take;
            used += take;
            if (reader->header_have < GRPC_FRAME_HEADER_LEN)
                break;
            *consumed = used;
            if (reader->header[0] > 1)
                return GRPC_READER_BAD_FLAG;
            reader->compressed = reader->header[0];
            reader->body_len = (size_t)reader->header[1] << 24 | (size_t)reader->header[2] << 16 |
                               (size_t)reader->header[3] << 8 | reader->header[4];
            /* Refuse before buffering a single body byte. */
            if (reader->body_len > reader->max_len)
                return GRPC_READER_TOO_LARGE;
            if (reader->compressed && !reader->allow_compressed)
                return GRPC_READER_COMPRESSED;
            reader->body_have = 0;
            if (reader->body_len > 0) {
                reader->body = malloc(reader->body_len);
                if (!reader->body)
                    return GRPC_READER_NO_MEMORY;
            }
        }
        size_t want = reader->body_len - reader->body_have;
        size_t take = len - used < want ? len - used : want;
        if (take) {
            memcpy(reader->body + reader->body_have, data + used, take);
            reader->body_have += take;
            used += take;
        }
        if (reader->body_have == reader->body_len) {
            reader->message_ready = 1;
            *consumed = used;
            return GRPC_READER_MESSAGE;
        }
    }
    *consumed = used;
    return GRPC_READER_NEED_MORE;
}

const uint8_t *grpc_reader_message(const struct grpc_reader *reader, size_t *len)
{
    *len = reader->body_len;
    return reader->body ? reader->body : (const uint8_t *)"";
}

void grpc_reader_take(struct grpc_reader *reader)
{
    free(reader->body);
    reader->body = NULL;
    reader->body_len = 0;
    reader->body_have = 0;
    reader->header_have = 0;
    reader->message_ready = 0;
}

int grpc_reader_idle(const struct grpc_reader *reader)
{
    return reader->header_have == 0 && !reader->message_ready;
}

size_t grpc_message_encode(const char *msg, size_t len, char *out, size_t out_size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t need = 0;
    size_t written = 0; /* stops growing at the first escape that does not fit */

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)msg[i];
        size_t width = c >= 0x20 && c <= 0x7e && c != '%' ? 1 : 3;
        if (written == need && need + width < out_size) {
            if (width == 1) {
                out[written] = (char)c;
            } else {
                out[written] = '%';
                out[written + 1] = hex[c >> 4];
                out[written + 2] = hex[c & 15];
            }
            written += width;
        }
        need += width;
    }
    out[written] = '\0';
    return need;
}

size_t grpc_message_decode(const char *in, size_t len, char *out)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (in[i] == '%' && i + 2 < len && hex_value(in[i + 1]) >= 0 && hex_value(in[i + 2]) >= 0) {
            out[n++] = (char)(hex_value(in[i + 1]) << 4 | hex_value(in[i + 2]));
            i += 2;
        } else {
            out[n++] = in[i];
        }
    }
    return n;
}

int grpc_timeout_parse(const char *value, size_t len, uint64_t *nanoseconds)
{
    uint64_t amount = 0;
    uint64_t unit;

    if (len < 2 || len > 9)
        return -1;
    for (size_t i = 0; i + 1 < len; i++) {
        if (value[i] < '0' || value[i] > '9')
            return -1;
        amount = amount * 10 + (uint64_t)(value[i] - '0');
    }
    switch (value[len - 1]) {
    case 'H':
        unit = 3600ull * 1000000000ull;
        break;
    case 'M':
        unit = 60ull * 1000000000ull;
        break;
    case 'S':
        unit = 1000000000ull;
        break;
    case 'm':
        unit = 1000000ull;
        break;
    case 'u':
        unit = 1000ull;
        break;
    case 'n':
        unit = 1;
        break;
    default:
        return -1;
    }
    /* 8 digits of hours overflow 64 bits of nanoseconds: saturate. */
    if (amount > UINT64_MAX / unit)
        *nanoseconds = UINT64_MAX;
    else
        *nanoseconds = amount * unit;
    return 0;
}

long grpc_base64_decode(const char *in, size_t len, uint8_t *out)
{
    size_t n;

    /* gRPC's peers send either alphabet, padded or not. */
    if (base64_decode(in, len, BASE64_URL_ALPHABET | BASE64_PADDING_OPTIONAL, out, &n) != BASE64_OK)
        return -1;
    return (long)n;
}
