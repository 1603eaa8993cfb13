/* grpc_protocol: the protocol table, the grpc-web trailer frame and the
 * streaming base64 of grpc-web-text. */
#include "grpc/grpc_protocol.h"

#include <string.h>
#include <strings.h>

#include "common/base64.h"
#include "common/byte_queue.h"
#include "grpc/grpc_wire.h"

/* 1 when CT (LEN bytes) is BASE, optionally followed by SUFFIXES[i] ("+proto")
 * or by ';' parameters. */
static int type_is(const char *ct, size_t len, const char *base, const char *suffix)
{
    size_t base_len = strlen(base);
    size_t end = 0;

    while (end < len && ct[end] != ';' && ct[end] != ' ' && ct[end] != '\t')
        end++;
    if (end < base_len || strncasecmp(ct, base, base_len) != 0)
        return 0;
    if (end == base_len)
        return 1;
    return suffix && end - base_len == strlen(suffix) &&
           strncasecmp(ct + base_len, suffix, end - base_len) == 0;
}

/* Native gRPC has always taken any "+codec" suffix and answered with the
 * plain type; the codec itself is checked when the message is decoded. */
static int matches_grpc(const char *ct, size_t len)
{
    return len >= 16 && strncasecmp(ct, "application/grpc", 16) == 0 &&
           (len == 16 || ct[16] == '+' || ct[16] == ';');
}

static int matches_grpc_web(const char *ct, size_t len)
{
    return type_is(ct, len, "application/grpc-web", "+proto");
}

static int matches_grpc_web_text(const char *ct, size_t len)
{
    return type_is(ct, len, "application/grpc-web-text", "+proto");
}

const struct grpc_protocol grpc_protocol_grpc = {
    .id = GRPC_PROTOCOL_GRPC,
    .name = "grpc",
    .matches = matches_grpc,
    .response_content_type = "application/grpc",
    .needs_te_trailers = 1,
    .needs_http_trailers = 1,
};

static const struct grpc_protocol grpc_protocol_web = {
    .id = GRPC_PROTOCOL_GRPC_WEB,
    .name = "grpc-web",
    .matches = matches_grpc_web,
    .trailers_in_body = 1,
    .unary_requests_only = 1,
};

static const struct grpc_protocol grpc_protocol_web_text = {
    .id = GRPC_PROTOCOL_GRPC_WEB_TEXT,
    .name = "grpc-web-text",
    .matches = matches_grpc_web_text,
    .trailers_in_body = 1,
    .unary_requests_only = 1,
    .base64 = 1,
};

static int matches_connect_proto(const char *ct, size_t len)
{
    return type_is(ct, len, "application/proto", NULL);
}

static int matches_connect_json(const char *ct, size_t len)
{
    return type_is(ct, len, "application/json", NULL);
}

static int matches_connect_stream_proto(const char *ct, size_t len)
{
    return type_is(ct, len, "application/connect+proto", NULL);
}

static int matches_connect_stream_json(const char *ct, size_t len)
{
    return type_is(ct, len, "application/connect+json", NULL);
}

/* Connect's status always travels in the body (the error JSON, or the
 * end-of-stream message), never in HTTP trailers. */
static const struct grpc_protocol grpc_protocol_connect_unary = {
    .id = GRPC_PROTOCOL_CONNECT,
    .name = "connect",
    .matches = matches_connect_proto,
    .response_content_type = "application/proto",
    .trailers_in_body = 1,
    .connect = 1,
    .bare_body = 1,
};

static const struct grpc_protocol grpc_protocol_connect_unary_json = {
    .id = GRPC_PROTOCOL_CONNECT_JSON,
    .name = "connect-json",
    .matches = matches_connect_json,
    .response_content_type = "application/json",
    .trailers_in_body = 1,
    .connect = 1,
    .bare_body = 1,
    .json = 1,
};

static const struct grpc_protocol grpc_protocol_connect_stream = {
    .id = GRPC_PROTOCOL_CONNECT,
    .name = "connect",
    .matches = matches_connect_stream_proto,
    .response_content_type = "application/connect+proto",
    .trailers_in_body = 1,
    .connect = 1,
};

static const struct grpc_protocol grpc_protocol_connect_stream_json = {
    .id = GRPC_PROTOCOL_CONNECT_JSON,
    .name = "connect-json",
    .matches = matches_connect_stream_json,
    .response_content_type = "application/connect+json",
    .trailers_in_body = 1,
    .connect = 1,
    .json = 1,
};

/* The more specific types first: "application/grpc-web" also starts with
 * "application/grpc". */
static const struct grpc_protocol *const protocols[] = {
    &grpc_protocol_web_text,
    &grpc_protocol_web,
    &grpc_protocol_grpc,
    &grpc_protocol_connect_unary,
    &grpc_protocol_connect_unary_json,
    &grpc_protocol_connect_stream,
    &grpc_protocol_connect_stream_json,
};

const struct grpc_protocol *grpc_protocol_find(const char *content_type)
{
    size_t len;

    if (!content_type)
        return NULL;
    len = strlen(content_type);
    for (size_t i = 0; i < sizeof(protocols) / sizeof(protocols[0]); i++)
        if (protocols[i]->matches(content_type, len))
            return protocols[i];
    return NULL;
}

const char *grpc_protocol_name(enum grpc_protocol_id id)
{
    for (size_t i = 0; i < sizeof(protocols) / sizeof(protocols[0]); i++)
        if (protocols[i]->id == id)
            return protocols[i]->name;
    return "unknown";
}

int grpc_web_trailer_frame(struct byte_queue *out, const char *const *names,
                           const char *const *values, size_t count)
{
    size_t len = 0;
    uint8_t *at;

    for (size_t i = 0; i < count; i++)
        len += strlen(names[i]) + 1 + strlen(values[i]) + 2;
    at = byte_queue_reserve(out, GRPC_FRAME_HEADER_LEN + len);
    if (!at)
        return -1;
    grpc_frame_header(at, (uint32_t)len);
    at[0] = 0x80;
    at += GRPC_FRAME_HEADER_LEN;
    for (size_t i = 0; i < count; i++) {
        size_t n = strlen(names[i]), v = strlen(values[i]);
        /* Names go lowercase, as PROTOCOL-WEB asks; ours already are. */
        for (size_t j = 0; j < n; j++)
            *at++ = (uint8_t)((names[i][j] >= 'A' && names[i][j] <= 'Z') ? names[i][j] + 32
                                                                         : names[i][j]);
        *at++ = ':';
        memcpy(at, values[i], v);
        at += v;
        *at++ = '\r';
        *at++ = '\n';
    }
    return 0;
}

/* --- base64 -------------------------------------------------------------- */

int grpc_base64_decoder_feed(struct grpc_base64_decoder *dec, const uint8_t *in, size_t len,
                             struct byte_queue *out)
{
    uint8_t *at = byte_queue_reserve(out, (len + dec->carry_len) / 4 * 3 + 3);
    size_t produced = 0;

    if (!at)
        return -2;
    for (size_t i = 0; i < len; i++) {
        uint8_t bytes[3];
        int n;
        dec->carry[dec->carry_len++] = in[i];
        if (dec->carry_len < 4)
            continue;
        dec->carry_len = 0;
        n = base64_decode_group((const char *)dec->carry, bytes);
        if (n < 0) {
            out->end = (size_t)(at - out->data) + produced;
            return -1;
        }
        memcpy(at + produced, bytes, (size_t)n);
        produced += (size_t)n;
    }
    /* Give back what the reservation did not use. */
    out->end = (size_t)(at - out->data) + produced;
    return 0;
}

int grpc_base64_decoder_done(const struct grpc_base64_decoder *dec)
{
    return dec->carry_len == 0;
}

size_t grpc_base64_encoder_room(const struct grpc_base64_encoder *enc, size_t out_room)
{
    size_t groups = out_room / 4;

    if (groups < 2)
        return 0;
    /* One group stays free for the padded end. */
    groups -= 1;
    return groups * 3 > enc->carry_len ? groups * 3 - enc->carry_len : 0;
}

size_t grpc_base64_encoder_feed(struct grpc_base64_encoder *enc, const uint8_t *in, size_t len,
                                int final, uint8_t *out)
{
    size_t written = 0, i = 0;

    /* Complete the carried group first. */
    if (enc->carry_len > 0) {
        uint8_t group[3];
        size_t have = enc->carry_len;
        memcpy(group, enc->carry, have);
        while (have < 3 && i < len)
            group[have++] = in[i++];
        enc->carry_len = 0;
        if (have == 3) {
            base64_encode_group(group, 3, (char *)out);
            written += 4;
        } else {
            memcpy(enc->carry, group, have);
            enc->carry_len = have;
        }
    }
    for (; i + 3 <= len; i += 3) {
        base64_encode_group(in + i, 3, (char *)out + written);
        written += 4;
    }
    while (i < len)
        enc->carry[enc->carry_len++] = in[i++];
    if (final && enc->carry_len > 0) {
        base64_encode_group(enc->carry, enc->carry_len, (char *)out + written);
        written += 4;
        enc->carry_len = 0;
    }
    return written;
}
