/* libFuzzer target for the request path: gRPC header validation, message
 * reassembly and decoding, and every handler on both doors, against a real
 * hub (store, sessions, bus, Runner registry) on a fresh copy of a
 * provisioned store for each input.  HTTP/2 is fake_h2 (in memory).
 *
 * The input is a script of client actions, each starting with an action
 * byte (see run_script): open a call (method, door, token, header
 * variants), send a framed message or raw body bytes on an open call,
 * half-close it, or cancel it.  After each action the server's send side
 * and its event loop run once, so streams, Runner commands and
 * subscriptions interleave as they would on a connection. */
#include <dirent.h>
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "compass/v1/services.pb-c.h"
#include "core/bus.h"
#include "core/session.h"
#include "fake_h2.h"
#include "grpc/grpc.h"
#include "grpc/health/v1/health.pb-c.h"
#include "grpc/reflection/v1/reflection.pb-c.h"
#include "grpc/reflection/v1alpha/reflection.pb-c.h"
#include "rpc/descriptor_index.h"
#include "rpc/rpc.h"
#include "hub/runner_control.h"
#include "store_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define MAX_CALLS 16
#define MAX_PATHS 64

static const ProtobufCServiceDescriptor *const services[] = {
    &compass__v1__compass_service__descriptor,
    &compass__v1__runner_service__descriptor,
    &compass__v1__resource_service__descriptor,
    &grpc__health__v1__health__descriptor,
    &grpc__reflection__v1__server_reflection__descriptor,
    &grpc__reflection__v1alpha__server_reflection__descriptor,
};

static const char *const tokens[] = {
    NULL,        "t-admin",    "t-alice",    "t-bob",     "t-carol",     "t-agent-1",
    "t-agent-2", "t-runner-1", "t-runner-2", "t-unknown", "t-alice\x01", "",
};

extern const unsigned char agenthub_descriptor_set[];
extern const size_t agenthub_descriptor_set_len;

static char paths[MAX_PATHS][128];
static char blob_dir[128];
static struct descriptor_index *descriptors;
static size_t path_count;

struct world {
    struct event_base *base;
    struct h2_server *h2;
    struct grpc_server *grpc;
    struct hub hub;
    struct rpc_context rpc; /* the doors' data */
    struct session_registry sessions;
    struct bus bus;
    struct h2_listener *doors[2];
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    log_setup("fuzz", LOG_LEVEL_ERROR + 1);
    store_template_init();
    snprintf(blob_dir, sizeof(blob_dir), "%s/blobs", store_template_dir());
    if (mkdir(blob_dir, 0700) != 0)
        abort();
    /* The reflection index never changes: built once, shared by every input. */
    descriptors = descriptor_index_new(agenthub_descriptor_set, agenthub_descriptor_set_len);
    if (!descriptors)
        abort();
    for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++)
        for (unsigned m = 0; m < services[i]->n_methods && path_count < MAX_PATHS; m++)
            snprintf(paths[path_count++], sizeof(paths[0]), "/%s/%s", services[i]->name,
                     services[i]->methods[m].name);
    return 0;
}

/* A fresh server on a fresh copy of the template store. */
static void world_open(struct world *w)
{
    struct h2_limits h2_limits = {.max_concurrent_streams = 100,
                                  .max_header_list_bytes = 16384,
                                  .idle_timeout_ms = 60000,
                                  .max_connections = 100};
    struct grpc_limits grpc_limits = {.max_recv_bytes = 1 << 20, .send_bound_bytes = 256 << 10};
    struct grpc_door *doors[2];
    char err[256];

    memset(w, 0, sizeof(*w));
    w->hub.store = store_template_fresh();
    session_registry_init(&w->sessions, 64 << 10);
    bus_init(&w->bus, 256 << 10, 0);
    w->rpc.descriptors = descriptors;
    w->hub.sessions = &w->sessions;
    w->hub.bus = &w->bus;
    hub_log_memory(&w->hub.log, &w->bus);
    w->rpc.config.has_runner_door = 1;
    w->rpc.config.blob_dir = blob_dir; /* emptied after each input */
    w->rpc.config.max_blob_bytes = 64 << 10;
    w->rpc.config.subscriber_buffer_bytes = 64 << 10;
    w->hub.config.command_timeout_ms = 5000;
    w->base = event_base_new();
    w->hub.runners = w->base ? runner_registry_new(w->base) : NULL;
    w->h2 = h2_server_new(w->base, &h2_limits);
    w->grpc = w->h2 ? grpc_server_new(w->base, w->h2, &grpc_limits) : NULL;
    w->rpc.hub = &w->hub;
    w->rpc.health = health_new();
    if (!w->hub.runners || !w->grpc || !w->rpc.health)
        abort();
    for (int i = 0; i < 2; i++) {
        doors[i] = grpc_door_new(w->grpc, i ? "runner" : "public", &w->rpc);
        if (doors[i])
            grpc_door_set_kind(doors[i], i ? AUTH_DOOR_RUNNER : AUTH_DOOR_PUBLIC);
        if (!doors[i] || health_register(&w->rpc, doors[i]) != 0 ||
            reflection_register(&w->rpc, doors[i]) != 0 ||
            resource_register(&w->rpc, doors[i]) != 0 ||
            (i ? runner_service_register(&w->rpc, doors[i])
               : compass_register(&w->rpc, doors[i])) != 0 ||
            grpc_door_listen(doors[i], "fuzz:0", NULL, err, sizeof(err)) != 0)
            abort();
        w->doors[i] = fake_h2_listener(w->h2, i ? "runner" : "public");
    }
}

/* Removes DIR's files and, below it, one level of directories (the blob
 * store's session/blob layout), keeping DIR itself when KEEP. */
static void remove_tree(const char *dir, int depth, int keep)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char child[512];

    while (d && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(child, sizeof(child), "%s/%s", dir, e->d_name);
        if (unlink(child) != 0 && depth > 0)
            remove_tree(child, depth - 1, 0);
    }
    if (d)
        closedir(d);
    if (!keep)
        rmdir(dir);
}

static void world_close(struct world *w)
{
    h2_server_free(w->h2); /* streams close first, as a connection would */
    grpc_server_free(w->grpc);
    runner_registry_free(w->hub.runners);
    session_registry_free(&w->sessions);
    bus_free(&w->bus);
    store_close(w->hub.store);
    health_free(w->rpc.health);
    event_base_free(w->base);
    remove_tree(blob_dir, 1, 1);
}

struct cursor {
    const uint8_t *data;
    size_t size;
    size_t at;
};

static int next_byte(struct cursor *c, uint8_t *out)
{
    if (c->at >= c->size)
        return -1;
    *out = c->data[c->at++];
    return 0;
}

/* Opens a call: B1 picks the method (and, bit 7, the Connect content type
 * of variant 2), B2 the token (bits 0-3), the door (bit 4), a grpc-timeout
 * (bit 5) and a header variant (bits 6-7: valid gRPC, no te, Connect with
 * JSON messages (unary application/json, or application/connect+json), GET). */
static uint32_t open_call(struct world *w, uint8_t b1, uint8_t b2)
{
    const char *token = tokens[(b2 & 0x0f) % (sizeof(tokens) / sizeof(tokens[0]))];
    uint32_t id = fake_h2_open(w->h2, w->doors[(b2 >> 4) & 1]);
    int variant = b2 >> 6;
    char bearer[64];

    if (!id)
        return 0;
    fake_h2_header(w->h2, id, ":method", variant == 3 ? "GET" : "POST");
    fake_h2_header(w->h2, id, ":scheme", "http");
    fake_h2_header(w->h2, id, ":path", paths[b1 % path_count]);
    fake_h2_header(w->h2, id, "content-type",
                   variant != 2  ? "application/grpc+proto"
                   : (b1 & 0x80) ? "application/connect+json"
                                 : "application/json");
    if (variant != 1)
        fake_h2_header(w->h2, id, "te", "trailers");
    if (b2 & 0x20)
        fake_h2_header(w->h2, id, "grpc-timeout", "5S");
    if (token) {
        snprintf(bearer, sizeof(bearer), "Bearer %s", token);
        fake_h2_header(w->h2, id, "authorization", bearer);
    }
    fake_h2_headers_done(w->h2, id);
    return id;
}

static void settle(struct world *w)
{
    fake_h2_pump(w->h2);
    event_base_loop(w->base, EVLOOP_NONBLOCK);
    fake_h2_pump(w->h2);
}

/* Runs the script in DATA.  Action byte A: A % 5 is 0 open (two more
 * bytes), 1 a message on call A / 5 (a 2-byte little-endian length, the
 * protobuf bytes, framed here, and a byte choosing where to split the
 * frame), 2 raw body bytes (a length byte, the bytes), 3 half-close,
 * 4 cancel. */
static void run_script(struct world *w, const uint8_t *data, size_t size)
{
    struct cursor c = {data, size, 0};
    uint32_t calls[MAX_CALLS];
    size_t ncalls = 0;
    uint8_t a, b1, b2, split;

    while (next_byte(&c, &a) == 0) {
        uint32_t id = ncalls ? calls[(a / 5) % ncalls] : 0;
        switch (a % 5) {
        case 0:
            if (next_byte(&c, &b1) != 0 || next_byte(&c, &b2) != 0)
                return;
            if (ncalls < MAX_CALLS) {
                uint32_t opened = open_call(w, b1, b2);
                if (opened)
                    calls[ncalls++] = opened;
            }
            break;
        case 1: {
            size_t len;
            uint8_t *frame;
            if (next_byte(&c, &b1) != 0 || next_byte(&c, &b2) != 0)
                return;
            len = (size_t)b1 | (size_t)b2 << 8;
            if (len > c.size - c.at)
                len = c.size - c.at;
            frame = malloc(len + 5);
            if (!frame)
                abort();
            frame[0] = 0;
            frame[1] = (uint8_t)(len >> 24);
            frame[2] = (uint8_t)(len >> 16);
            frame[3] = (uint8_t)(len >> 8);
            frame[4] = (uint8_t)len;
            memcpy(frame + 5, c.data + c.at, len);
            c.at += len;
            split = 0;
            next_byte(&c, &split);
            if (id) {
                size_t cut = (len + 5) * split / 256;
                fake_h2_data(w->h2, id, frame, cut);
                fake_h2_data(w->h2, id, frame + cut, len + 5 - cut);
            }
            free(frame);
            break;
        }
        case 2: {
            size_t len;
            if (next_byte(&c, &b1) != 0)
                return;
            len = b1 < c.size - c.at ? b1 : c.size - c.at;
            if (id)
                fake_h2_data(w->h2, id, c.data + c.at, len);
            c.at += len;
            break;
        }
        case 3:
            if (id)
                fake_h2_end(w->h2, id);
            break;
        default:
            if (id)
                fake_h2_cancel(w->h2, id);
            break;
        }
        settle(w);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct world w;

    world_open(&w);
    run_script(&w, data, size);
    for (int i = 0; i < 4; i++)
        settle(&w);
    world_close(&w);
    return 0;
}
