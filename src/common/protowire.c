/* protowire: the one hand-written protobuf wire reader and writer. */
#include "common/protowire.h"

void protowire_reader_init(struct protowire_reader *r, const void *bytes, size_t len)
{
    r->at = bytes;
    r->end = len ? r->at + len : r->at;
}

int protowire_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;

    for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

int protowire_next(struct protowire_reader *r, struct protowire_field *f)
{
    uint64_t key, n;

    if (r->at >= r->end)
        return 0;
    if (protowire_read_varint(&r->at, r->end, &key) != 0 || key >> 3 == 0 ||
        key >> 3 > PROTOWIRE_FIELD_MAX)
        return -1;
    f->number = (uint32_t)(key >> 3);
    f->type = (enum protowire_type)(key & 7);
    f->varint = 0;
    f->data = NULL;
    f->len = 0;
    switch (key & 7) {
    case PROTOWIRE_VARINT:
        return protowire_read_varint(&r->at, r->end, &f->varint) == 0 ? 1 : -1;
    case PROTOWIRE_FIXED64:
        if (r->end - r->at < 8)
            return -1;
        r->at += 8;
        return 1;
    case PROTOWIRE_FIXED32:
        if (r->end - r->at < 4)
            return -1;
        r->at += 4;
        return 1;
    case PROTOWIRE_LEN:
        if (protowire_read_varint(&r->at, r->end, &n) != 0 || n > (uint64_t)(r->end - r->at))
            return -1;
        f->data = r->at;
        f->len = (size_t)n;
        r->at += n;
        return 1;
    default: /* groups (3, 4) and the reserved 6, 7 */
        return -1;
    }
}

int protowire_find_len(const void *bytes, size_t len, uint32_t number, const uint8_t **data,
                       size_t *data_len)
{
    struct protowire_reader r;
    struct protowire_field f;

    protowire_reader_init(&r, bytes, len);
    while (protowire_next(&r, &f) == 1) {
        if (f.number == number && f.type == PROTOWIRE_LEN) {
            *data = f.data;
            *data_len = f.len;
            return 0;
        }
    }
    return -1;
}

size_t protowire_put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;

    do {
        out[n++] = (uint8_t)(v | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return n;
}

size_t protowire_put_varint_field(uint8_t *out, uint32_t number, uint64_t value)
{
    size_t n = protowire_put_varint(out, (uint64_t)number << 3 | PROTOWIRE_VARINT);

    return n + protowire_put_varint(out + n, value);
}
