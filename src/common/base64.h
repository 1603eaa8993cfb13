/* base64 (RFC 4648): the standard alphabet, padded, for encoding; one
 * decoder whose options cover what its callers accept.  The group encoder
 * serves the one-shot encoder here, gRPC's -bin metadata and JSON bytes,
 * grpc-web-text's streaming encoder and the Runner's image uploads.  The
 * decoder serves -bin metadata and JSON bytes (either alphabet, padding
 * optional), the Runner's images (standard alphabet, padding required) and,
 * a group at a time, grpc-web-text's stream of padded groups. */
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

/* What base64_decode accepts besides the standard alphabet. */
enum base64_options {
    BASE64_STRICT = 0,
    /* '-' and '_' (the URL alphabet) also stand for 62 and 63, even mixed
     * with '+' and '/'. */
    BASE64_URL_ALPHABET = 1 << 0,
    /* Any number of trailing '=' is dropped and the text need not fill its
     * last group; without it, at most two '=' and whole groups only. */
    BASE64_PADDING_OPTIONAL = 1 << 1,
};

enum base64_result {
    BASE64_OK = 0,
    BASE64_MALFORMED = 1, /* a character outside the alphabet, or a bad length */
};

/* The most bytes LEN characters decode to: the size OUT needs. */
size_t base64_decoded_max_length(size_t len);

/* Decodes IN[0..LEN) into OUT (base64_decoded_max_length(LEN) bytes) and
 * sets *OUT_LEN.  The bits a last partial group leaves over are ignored.
 * Returns BASE64_OK, or BASE64_MALFORMED with OUT's contents unspecified
 * and *OUT_LEN untouched. */
enum base64_result base64_decode(const char *in, size_t len, enum base64_options options,
                                 uint8_t *out, size_t *out_len);

/* Decodes one group of four characters of the standard alphabet, padded
 * with one or two '=' at its end when it carries fewer than three bytes.
 * Returns the bytes written to OUT (1 to 3), or -1 when it is malformed. */
int base64_decode_group(const char group[4], uint8_t out[3]);

#endif
