/* base64: the standard alphabet (RFC 4648 section 4), padded, encoding
 * only.  One group encoder that the one-shot encoder here, gRPC's -bin
 * metadata and JSON bytes, grpc-web-text's streaming encoder and the
 * Runner's image uploads all use.  Decoders stay with their callers: what
 * each accepts differs (padding optional or required, the URL alphabet, a
 * stream of padded groups). */
#ifndef AGENTHUB_COMMON_BASE64_H
#define AGENTHUB_COMMON_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Encodes one group of N raw bytes (1 to 3) into four characters, padded
 * with '=' when N < 3. */
void base64_encode_group(const uint8_t *in, size_t n, char out[4]);

/* The characters base64_encode writes for LEN bytes, without the NUL. */
size_t base64_encoded_length(size_t len);

/* Encodes IN[0..LEN) into OUT with a terminating NUL.  Returns the
 * characters written; when OUT_SIZE is smaller than that plus one, writes
 * nothing and returns the characters needed. */
size_t base64_encode(const uint8_t *in, size_t len, char *out, size_t out_size);

#endif
