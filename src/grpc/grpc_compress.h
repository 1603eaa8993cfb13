/* grpc_compress: gRPC message compression (grpc-encoding gzip and deflate,
 * on zlib).
 *
 * A compressed message is inflated into at most a caller-given number of
 * bytes: a message that would inflate past it is refused before any byte
 * beyond the limit is produced, so a small compressed message cannot make
 * the server allocate more than the receive limit. */
#ifndef AGENTHUB_GRPC_COMPRESS_H
#define AGENTHUB_GRPC_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

enum grpc_encoding {
    GRPC_ENCODING_IDENTITY = 0,
    GRPC_ENCODING_GZIP = 1,
    GRPC_ENCODING_DEFLATE = 2,
    GRPC_ENCODING_UNSUPPORTED = 3,
};

/* Bit for ENCODING in an accepted-encodings set. */
#define GRPC_ENCODING_BIT(encoding) (1u << (encoding))

/* What this server advertises in grpc-accept-encoding. */
#define GRPC_ACCEPT_ENCODING_VALUE "identity,gzip,deflate"

/* Messages smaller than this go out uncompressed even to a client that
 * accepts compression: below it the saving does not pay for the work. */
#define GRPC_COMPRESS_MIN_BYTES 1024

/* The encoding named by a grpc-encoding value (case-sensitive, as the
 * names are registered lowercase); GRPC_ENCODING_UNSUPPORTED otherwise. */
enum grpc_encoding grpc_encoding_parse(const char *name, size_t len);

/* "identity", "gzip" or "deflate". */
const char *grpc_encoding_name(enum grpc_encoding encoding);

/* The set of supported encodings in a comma-separated grpc-accept-encoding
 * value (spaces around names ignored, unknown names skipped); identity is
 * always in it. */
unsigned grpc_accept_encoding_parse(const char *value, size_t len);

enum grpc_inflate_result {
    GRPC_INFLATE_OK = 0,
    GRPC_INFLATE_TOO_LARGE = -1, /* would inflate past the limit */
    GRPC_INFLATE_CORRUPT = -2,   /* not a whole stream of ENCODING, or bytes after its end */
    GRPC_INFLATE_NO_MEMORY = -3,
};

/* Inflates IN (gzip or deflate) into *OUT (malloc'd, the caller frees; NULL
 * for an empty message) of *OUT_LEN <= LIMIT bytes.  Returns a
 * grpc_inflate_result; on error *OUT is NULL. */
enum grpc_inflate_result grpc_inflate(enum grpc_encoding encoding, const uint8_t *in, size_t in_len,
                                      size_t limit, uint8_t **out, size_t *out_len);

/* Compresses IN with ENCODING (gzip or deflate) into *OUT (malloc'd).
 * Returns 0, or -1 when memory is short. */
int grpc_deflate(enum grpc_encoding encoding, const uint8_t *in, size_t in_len, uint8_t **out,
                 size_t *out_len);

#endif
