/* libFuzzer target for the gRPC wire parsers: message reassembly from
 * arbitrary chunks (the chunk sizes come from the input too), grpc-timeout,
 * grpc-message decoding and -bin base64.  Any input either fails cleanly or
 * yields messages whose lengths add up to what was consumed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct grpc_reader reader;
    size_t offset = 1, total_messages = 0;
    uint64_t nanoseconds;
    char *text;
    uint8_t *decoded;

    if (size == 0)
        return 0;
    grpc_reader_init(&reader, 1 << 16);
    while (offset < size) {
        size_t chunk = 1 + (size_t)data[0] % 64;
        size_t consumed;
        int rv;
        if (chunk > size - offset)
            chunk = size - offset;
        rv = grpc_reader_feed(&reader, data + offset, chunk, &consumed);
        if (consumed > chunk)
            abort();
        offset += consumed;
        if (rv == GRPC_READER_MESSAGE) {
            size_t len;
            grpc_reader_message(&reader, &len);
            total_messages += GRPC_FRAME_HEADER_LEN + len;
            grpc_reader_take(&reader);
        } else if (rv < 0 || consumed == 0) {
            break;
        }
    }
    if (total_messages > size)
        abort();
    grpc_reader_free(&reader);

    grpc_timeout_parse((const char *)data, size, &nanoseconds);
    text = malloc(size + 1);
    decoded = malloc(size / 4 * 3 + 3);
    if (!text || !decoded)
        abort();
    if (grpc_message_decode((const char *)data, size, text) > size)
        abort();
    if (grpc_base64_decode((const char *)data, size, decoded) > (long)(size / 4 * 3 + 3))
        abort();
    free(text);
    free(decoded);
    return 0;
}
