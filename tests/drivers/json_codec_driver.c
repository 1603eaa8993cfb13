/* json_codec_driver: the JSON codec (src/grpc/grpc_json.h) on stdin/stdout,
 * for tests/e2e/test_json_codec.py, which checks it against protobuf's own
 * JSON printer and parser.  One request a line, one answer a line:
 *   L                      -> "OK NAME..." every message type it knows
 *   S                      -> "OK BASE64" the descriptor set of proto/
 *   E TYPE BASE64(binary)  -> "OK JSON" the message as JSON
 *   D TYPE JSON            -> "OK BASE64(binary)" the JSON as a message
 * A refusal answers "ERR REASON". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "grpc/grpc_json.h"
#include "grpc/grpc_wire.h"

extern const ProtobufCMessageDescriptor *const json_driver_types[];
extern const size_t json_driver_type_count;
extern const unsigned char agenthub_descriptor_set[];
extern const size_t agenthub_descriptor_set_len;

static const ProtobufCMessageDescriptor *find_type(const char *name)
{
    for (size_t i = 0; i < json_driver_type_count; i++)
        if (strcmp(json_driver_types[i]->name, name) == 0)
            return json_driver_types[i];
    return NULL;
}

static void put_base64(const uint8_t *data, size_t len)
{
    size_t size = (len + 2) / 3 * 4 + 1;
    char *b64 = malloc(size);

    if (b64 == NULL)
        abort();
    base64_encode(data, len, b64, size);
    fputs(b64, stdout);
    free(b64);
}

static void encode(const ProtobufCMessageDescriptor *type, const char *arg)
{
    size_t len = strlen(arg), json_len;
    uint8_t *bin = malloc(len / 4 * 3 + 3);
    ProtobufCMessage *m;
    char why[GRPC_JSON_ERR_SIZE], *json;
    long n;

    if (bin == NULL)
        abort();
    n = grpc_base64_decode(arg, len, bin);
    m = n < 0 ? NULL : protobuf_c_message_unpack(type, NULL, (size_t)n, bin);
    free(bin);
    if (m == NULL) {
        printf("ERR protobuf-c could not unpack the message\n");
        return;
    }
    json = grpc_json_encode(m, &json_len, why, sizeof(why));
    if (json == NULL)
        printf("ERR %s\n", why);
    else
        printf("OK %s\n", json);
    free(json);
    protobuf_c_message_free_unpacked(m, NULL);
}

static void decode(const ProtobufCMessageDescriptor *type, const char *arg)
{
    char why[GRPC_JSON_ERR_SIZE];
    ProtobufCMessage *m = grpc_json_decode(type, arg, strlen(arg), why, sizeof(why));
    uint8_t *bin;
    size_t len;

    if (m == NULL) {
        printf("ERR %s\n", why);
        return;
    }
    len = protobuf_c_message_get_packed_size(m);
    bin = malloc(len + 1);
    if (bin == NULL)
        abort();
    protobuf_c_message_pack(m, bin);
    fputs("OK ", stdout);
    put_base64(bin, len);
    fputc('\n', stdout);
    free(bin);
    protobuf_c_message_free_unpacked(m, NULL);
}

int main(void)
{
    char *line = NULL, *type_name, *arg;
    size_t cap = 0;
    ssize_t n;

    while ((n = getline(&line, &cap, stdin)) > 0) {
        const ProtobufCMessageDescriptor *type;
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        if (line[0] == 'L') {
            fputs("OK", stdout);
            for (size_t i = 0; i < json_driver_type_count; i++)
                printf(" %s", json_driver_types[i]->name);
            fputc('\n', stdout);
            continue;
        }
        if (line[0] == 'S') {
            fputs("OK ", stdout);
            put_base64(agenthub_descriptor_set, agenthub_descriptor_set_len);
            fputc('\n', stdout);
            continue;
        }
        type_name = strchr(line, ' ');
        arg = type_name ? strchr(type_name + 1, ' ') : NULL;
        if (arg == NULL || (line[0] != 'E' && line[0] != 'D')) {
            printf("ERR bad request line\n");
            continue;
        }
        *arg++ = '\0';
        type = find_type(type_name + 1);
        if (type == NULL)
            printf("ERR unknown type %s\n", type_name + 1);
        else if (line[0] == 'E')
            encode(type, arg);
        else
            decode(type, arg);
    }
    free(line);
    return 0;
}
