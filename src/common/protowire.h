/* protowire: the protobuf wire format, read and written by hand where a
 * full protobuf-c decode or encode would cost too much (a request's strings
 * checked before it is decoded, a descriptor set indexed, a prefix written
 * in front of an already encoded message).
 *
 * Varints are read as protobuf-c reads them: at most ten bytes, bits past
 * the 64th dropped, so a hand reader never sees a different message from
 * the one protobuf-c decodes. */
#ifndef AGENTHUB_COMMON_PROTOWIRE_H
#define AGENTHUB_COMMON_PROTOWIRE_H

#include <stddef.h>
#include <stdint.h>

enum protowire_type {
    PROTOWIRE_VARINT = 0,
    PROTOWIRE_FIXED64 = 1,
    PROTOWIRE_LEN = 2,
    PROTOWIRE_FIXED32 = 5,
};

/* The largest field number protobuf allows. */
#define PROTOWIRE_FIELD_MAX 0x1fffffffu
/* Bytes protowire_put_varint_field writes at most (a five-byte key and a
 * ten-byte value). */
#define PROTOWIRE_VARINT_FIELD_MAX 15

struct protowire_reader {
    const uint8_t *at;
    const uint8_t *end;
};

/* One field: its number and wire type; VARINT holds a varint's value, DATA
 * and LEN a length-delimited field's bytes (NULL, 0 for the others). */
struct protowire_field {
    uint32_t number;
    enum protowire_type type;
    uint64_t varint;
    const uint8_t *data;
    size_t len;
};

void protowire_reader_init(struct protowire_reader *r, const void *bytes, size_t len);

/* Reads a varint at *P (advanced past it).  Returns 0, or -1 when it runs
 * past END or is longer than ten bytes. */
int protowire_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);

/* Reads the next field into *F.  Returns 1 for a field, 0 at the end, -1
 * when the framing is malformed (truncated, field number 0 or over
 * PROTOWIRE_FIELD_MAX, a group or a reserved wire type); the reader is not
 * usable after -1. */
int protowire_next(struct protowire_reader *r, struct protowire_field *f);

/* The bytes of the first length-delimited field NUMBER in BYTES[0..LEN):
 * returns 0 with *DATA and *DATA_LEN, or -1 when it is absent or the
 * framing before it is malformed. */
int protowire_find_len(const void *bytes, size_t len, uint32_t number, const uint8_t **data,
                       size_t *data_len);

/* Writes V as a varint into OUT (at least 10 bytes).  Returns the bytes
 * written. */
size_t protowire_put_varint(uint8_t *out, uint64_t v);

/* Writes field NUMBER (wire type varint) with VALUE into OUT (at least
 * PROTOWIRE_VARINT_FIELD_MAX bytes).  Returns the bytes written. */
size_t protowire_put_varint_field(uint8_t *out, uint32_t number, uint64_t value);

#endif
