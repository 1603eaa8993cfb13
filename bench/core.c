/* bench/core: throughput and memory of the session core.
 *
 * Prints ring appends/s of 200-byte frames (target >= 5M/s), JSONL
 * validate-and-append records/s of typical ~150-byte records (target >=
 * 500k/s), bytes per empty session (<= 1 KiB) and per subscriber cursor
 * (<= 256 B). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/clock.h"
#include "core/jsonl.h"
#include "core/ring.h"
#include "core/session.h"

static double seconds_since(uint64_t t0)
{
    return (double)(clock_monotonic_ns() - t0) / 1e9;
}

static double bench_ring(void)
{
    struct ring r;
    uint8_t frame[200];
    const long n = 20000000;
    uint64_t t0, sum = 0;
    long i;

    memset(frame, 0xab, sizeof(frame));
    ring_init(&r, RING_DEFAULT_BOUND);
    t0 = clock_monotonic_ns();
    for (i = 0; i < n; i++)
        sum += ring_append(&r, frame, sizeof(frame), (int64_t)i);
    double secs = seconds_since(t0);
    if (sum == 0)
        printf("impossible\n");
    ring_free(&r);
    return (double)n / secs;
}

/* A typical hook record: tool_start with its tool name and ids, ~150 bytes. */
static const char bench_line[] =
    "{\"type\":\"tool_start\",\"data\":{\"tool_name\":\"Bash\",\"tool_use_id\":"
    "\"toolu_01ABCDEFGHJKLMNOPQRS\",\"session_id\":\"0f27f8c6-8133-956e-a1b2\","
    "\"cwd\":\"/work/project\"}}\n";

/* Validates CALL (PER_CALL records) N times, rendering each record's canonical
 * line and appending it to a ring, as the AppendResourceOutput handler does.
 * Returns records per second. */
static double bench_jsonl(const char *call, size_t len, long n, long per_call)
{
    struct ring r;
    struct jsonl_batch b;
    char err[JSONL_ERR_SIZE], out[512];
    uint64_t t0, seq = 0;
    long i;
    size_t k;

    ring_init(&r, RING_DEFAULT_BOUND);
    t0 = clock_monotonic_ns();
    for (i = 0; i < n; i++) {
        if (jsonl_parse_batch(call, len, &b, err) != JSONL_OK) {
            fprintf(stderr, "bench: %s\n", err);
            exit(1);
        }
        for (k = 0; k < b.count; k++) {
            int m = jsonl_render(++seq, i, b.records[k].type, b.records[k].data_json,
                                 b.records[k].data_len, out, sizeof(out));
            ring_append(&r, out, (size_t)m, i);
        }
        jsonl_batch_free(&b);
    }
    double secs = seconds_since(t0);
    ring_free(&r);
    return (double)(n * per_call) / secs;
}

/* Reference: the same records through jansson (strict: duplicate keys
 * rejected) and a compact dump, the library an engineer would reach for. */
static double bench_jansson_reference(const char *line, size_t len, long n)
{
    struct ring r;
    json_error_t error;
    uint64_t t0;
    long i;

    ring_init(&r, RING_DEFAULT_BOUND);
    t0 = clock_monotonic_ns();
    for (i = 0; i < n; i++) {
        json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &error);
        char *out;
        if (!root) {
            fprintf(stderr, "bench: %s\n", error.text);
            exit(1);
        }
        out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        ring_append(&r, out, strlen(out), i);
        free(out);
        json_decref(root);
    }
    double secs = seconds_since(t0);
    ring_free(&r);
    return (double)n / secs;
}

/* Reference: copying 200-byte frames into a preallocated 4 MiB buffer with
 * no index, no eviction and no seq, the floor a ring can approach. */
static double bench_memcpy_reference(void)
{
    static uint8_t buffer[4 * 1024 * 1024];
    uint8_t frame[200];
    const long n = 20000000;
    size_t at = 0;
    uint64_t t0;
    long i;

    memset(frame, 0xab, sizeof(frame));
    t0 = clock_monotonic_ns();
    for (i = 0; i < n; i++) {
        if (at + sizeof(frame) > sizeof(buffer))
            at = 0;
        memcpy(buffer + at, frame, sizeof(frame));
        at += sizeof(frame);
        __asm__ volatile("" : : "r"(buffer) : "memory"); /* keep the copies */
    }
    return (double)n / seconds_since(t0);
}

static double bytes_per_empty_session(void)
{
    struct session_registry reg;
    const int n = 100000;
    char id[64];
    size_t base;
    int i;

    session_registry_init(&reg, 0);
    base = session_registry_memory_bytes(&reg);
    for (i = 0; i < n; i++) {
        struct session *s;
        snprintf(id, sizeof(id), "0f27f8c6-8133-956e-%016d", i);
        if (session_open(&reg, id, strlen(id), &s) < 0)
            exit(1);
    }
    double per = (double)(session_registry_memory_bytes(&reg) - base) / n;
    session_registry_free(&reg);
    return per;
}

int main(void)
{
    size_t len = strlen(bench_line);
    char call[64 * 150];
    long i, per = 32;
    double ring_rate = bench_ring();
    double one_rate, batch_rate;

    for (i = 0; i < per; i++)
        memcpy(call + (size_t)i * len, bench_line, len);
    one_rate = bench_jsonl(bench_line, len, 1000000, 1);
    batch_rate = bench_jsonl(call, len * (size_t)per, 1000000 / per, per);

    double memcpy_rate = bench_memcpy_reference();
    double jansson_rate = bench_jansson_reference(bench_line, len - 1, 300000);

    printf("ring appends/s (200-byte frames):                %.2fM (target >= 5M)\n",
           ring_rate / 1e6);
    printf("  reference, bare memcpy into a 4 MiB buffer:    %.2fM (ring/reference %.2f)\n",
           memcpy_rate / 1e6, ring_rate / memcpy_rate);
    printf("jsonl validate-and-append records/s (%zu B, 1 per call):  %.0fk (target >= 500k)\n",
           len - 1, one_rate / 1e3);
    printf("  reference, jansson load + compact dump + append: %.0fk (ours/reference %.1fx)\n",
           jansson_rate / 1e3, one_rate / jansson_rate);
    printf("jsonl validate-and-append records/s (%zu B, %ld per call): %.0fk\n", len - 1, per,
           batch_rate / 1e3);
    printf("bytes per empty session (36-byte id, table share included): %.0f (target <= 1024)\n",
           bytes_per_empty_session());
    printf("bytes per subscriber cursor (watcher + seq):     %zu (target <= 256)\n",
           sizeof(struct session_watcher) + sizeof(uint64_t));
    return 0;
}
