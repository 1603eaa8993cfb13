/* grpc.reflection.v1 and v1alpha ServerReflection: ServerReflectionInfo.
 *
 * Answers from the FileDescriptorSet the build embeds (gen/descriptor_set.c),
 * indexed once into ctx->descriptors.  v1alpha's messages are v1's under
 * another package name, byte for byte on the wire, so both paths decode and
 * encode with the v1 types and share one handler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "grpc/grpc.h"
#include "grpc/reflection/v1/reflection.pb-c.h"
#include "rpc/descriptor_index.h"
#include "rpc/rpc.h"

extern const unsigned char agenthub_descriptor_set[];
extern const size_t agenthub_descriptor_set_len;

typedef Grpc__Reflection__V1__ServerReflectionRequest reflection_request;
typedef Grpc__Reflection__V1__ServerReflectionResponse reflection_response;

struct service_names {
    char **names;
    size_t count;
    int failed;
};

/* Each send_* queues a copy of ECHO (valid_host, original_request) carrying
 * one message_response.  This one: an ErrorResponse of CODE and MESSAGE. */
static void send_error(struct grpc_call *call, const reflection_response *echo, int code,
                       const char *message)
{
    reflection_response response = *echo;
    Grpc__Reflection__V1__ErrorResponse error = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;

    error.error_code = code;
    error.error_message = (char *)message;
    response.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    response.error_response = &error;
    grpc_call_send(call, &response.base);
}

/* Like send_error, with "WHAT not found: NAME" as the message. */
static void send_not_found(struct grpc_call *call, const reflection_response *echo,
                           const char *what, const char *name)
{
    char message[320];

    snprintf(message, sizeof(message), "%s not found: %.256s", what, name);
    send_error(call, echo, GRPC_STATUS_NOT_FOUND, message);
}

/* No file declares extensions, so every extension is unknown. */
static void send_extension_not_found(struct grpc_call *call, const reflection_response *echo,
                                     const Grpc__Reflection__V1__ExtensionRequest *extension)
{
    char message[320];

    snprintf(message, sizeof(message), "extension %d of %.256s not found",
             extension ? (int)extension->extension_number : 0,
             extension ? extension->containing_type : "");
    send_error(call, echo, GRPC_STATUS_NOT_FOUND, message);
}

/* Queues FILE and its transitive dependencies, FILE first.  Finishes the
 * call RESOURCE_EXHAUSTED when memory is short. */
static void send_files(struct grpc_call *call, const reflection_response *echo,
                       const struct descriptor_index *index, size_t file)
{
    reflection_response response = *echo;
    Grpc__Reflection__V1__FileDescriptorResponse files =
        GRPC__REFLECTION__V1__FILE_DESCRIPTOR_RESPONSE__INIT;
    size_t total = descriptor_index_file_count(index);
    size_t *closure = calloc(total, sizeof(*closure));
    ProtobufCBinaryData *bytes = calloc(total, sizeof(*bytes));
    size_t count;

    if (!closure || !bytes) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        goto cleanup;
    }
    count = descriptor_index_closure(index, file, closure);
    for (size_t i = 0; i < count; i++)
        bytes[i].data = (uint8_t *)descriptor_index_file_bytes(index, closure[i], &bytes[i].len);
    files.n_file_descriptor_proto = count;
    files.file_descriptor_proto = bytes;
    response.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
    response.file_descriptor_response = &files;
    grpc_call_send(call, &response.base);

cleanup:
    free(closure);
    free(bytes);
}

static void collect_service(const char *service, size_t len, void *arg)
{
    struct service_names *list = arg;
    char **names;

    if (list->failed)
        return;
    names = realloc(list->names, (list->count + 1) * sizeof(*names));
    if (!names) {
        list->failed = 1;
        return;
    }
    list->names = names;
    if (!(names[list->count] = strndup(service, len))) {
        list->failed = 1;
        return;
    }
    list->count++;
}

/* Queues the services the call's door serves.  Finishes the call
 * RESOURCE_EXHAUSTED when memory is short. */
static void send_services(struct grpc_call *call, const reflection_response *echo,
                          struct rpc_context *ctx)
{
    reflection_response response = *echo;
    Grpc__Reflection__V1__ListServiceResponse list =
        GRPC__REFLECTION__V1__LIST_SERVICE_RESPONSE__INIT;
    struct service_names names = {NULL, 0, 0};
    Grpc__Reflection__V1__ServiceResponse *services = NULL;
    Grpc__Reflection__V1__ServiceResponse **pointers = NULL;

    grpc_door_each_service(grpc_call_door(call), collect_service, &names);
    if (names.count) {
        services = calloc(names.count, sizeof(*services));
        pointers = calloc(names.count, sizeof(*pointers));
    }
    if (names.failed || (names.count && (!services || !pointers))) {
        grpc_call_finish(call, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < names.count; i++) {
        grpc__reflection__v1__service_response__init(&services[i]);
        services[i].name = names.names[i];
        pointers[i] = &services[i];
    }
    list.n_service = names.count;
    list.service = pointers;
    response.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
    response.list_services_response = &list;
    grpc_call_send(call, &response.base);

cleanup:
    for (size_t i = 0; i < names.count; i++)
        free(names.names[i]);
    free(names.names);
    free(services);
    free(pointers);
}

/* No extensions are declared in the set, so a known message has none. */
static void send_extension_numbers(struct grpc_call *call, const reflection_response *echo,
                                   const struct descriptor_index *index, const char *type)
{
    reflection_response response = *echo;
    Grpc__Reflection__V1__ExtensionNumberResponse numbers =
        GRPC__REFLECTION__V1__EXTENSION_NUMBER_RESPONSE__INIT;
    enum descriptor_kind kind;

    if (descriptor_index_find_symbol(index, type, &kind) < 0 || kind != DESCRIPTOR_MESSAGE) {
        send_not_found(call, echo, "message type", type);
        return;
    }
    numbers.base_type_name = (char *)(type[0] == '.' ? type + 1 : type);
    response.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
    response.all_extension_numbers_response = &numbers;
    grpc_call_send(call, &response.base);
}

static void reflection_on_message(struct grpc_call *call, const ProtobufCMessage *message)
{
    const reflection_request *request = (const reflection_request *)message;
    struct rpc_context *ctx = grpc_call_door_data(call);
    const struct descriptor_index *index = ctx->descriptors;
    reflection_response echo = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT;
    long file;

    echo.valid_host = request->host;
    echo.original_request = (reflection_request *)request;
    if (!index) {
        send_error(call, &echo, GRPC_STATUS_INTERNAL, "no descriptors");
        return;
    }
    switch (request->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        send_services(call, &echo, ctx);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        file = descriptor_index_find_file(index, request->file_by_filename);
        if (file < 0)
            send_not_found(call, &echo, "file", request->file_by_filename);
        else
            send_files(call, &echo, index, (size_t)file);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        file = descriptor_index_find_symbol(index, request->file_containing_symbol, NULL);
        if (file < 0)
            send_not_found(call, &echo, "symbol", request->file_containing_symbol);
        else
            send_files(call, &echo, index, (size_t)file);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
        send_extension_not_found(call, &echo, request->file_containing_extension);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        send_extension_numbers(call, &echo, index, request->all_extension_numbers_of_type);
        break;
    default:
        send_error(call, &echo, GRPC_STATUS_INVALID_ARGUMENT, "no message_request set");
        break;
    }
}

static void reflection_on_half_close(struct grpc_call *call)
{
    grpc_call_finish(call, GRPC_STATUS_OK, NULL);
}

static const struct grpc_method reflection_methods[] = {
    {
        .path = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
        .kind = GRPC_METHOD_BIDI_STREAMING,
        .request_type = &grpc__reflection__v1__server_reflection_request__descriptor,
        .on_message = reflection_on_message,
        .on_half_close = reflection_on_half_close,
    },
    {
        .path = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        .kind = GRPC_METHOD_BIDI_STREAMING,
        .request_type = &grpc__reflection__v1__server_reflection_request__descriptor,
        .on_message = reflection_on_message,
        .on_half_close = reflection_on_half_close,
    },
};

int reflection_register(struct rpc_context *ctx, struct grpc_door *door)
{
    if (!ctx->descriptors) {
        ctx->descriptors =
            descriptor_index_new(agenthub_descriptor_set, agenthub_descriptor_set_len);
        if (!ctx->descriptors) {
            log_error("reflection: cannot index the embedded descriptor set");
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof(reflection_methods) / sizeof(reflection_methods[0]); i++)
        if (grpc_door_register(door, &reflection_methods[i]) != 0)
            return -1;
    return 0;
}

void reflection_free(struct rpc_context *ctx)
{
    descriptor_index_free(ctx->descriptors);
    ctx->descriptors = NULL;
}
