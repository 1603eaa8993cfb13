/* js_fanout: the reference for bench/cluster.sh.  Raw NATS JetStream
 * fan-out with libnats: one publisher puts FRAMES messages of SIZE bytes
 * into a stream configured as agenthub's AGENTHUB_FRAMES (file storage,
 * REPLICAS copies), K ordered consumers read them, split over the
 * subscriber URLs.  Prints deliveries per second and publish-to-delivery
 * latency percentiles, as bench/fanout does for agenthub.
 *
 *   js_fanout --pub nats://B --sub nats://A,nats://C [-k K] [-n FRAMES]
 *             [--size BYTES] [--rate FRAMES_PER_S] [--replicas N] */
#include <getopt.h>
#include <inttypes.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HISTOGRAM_BUCKETS 16384 /* 10 us buckets, as bench/fanout */
#define BUCKET_US         10
#define MAX_SUB_URLS      8

static atomic_ullong deliveries;
static atomic_ullong last_delivery_ns;
static atomic_ullong histogram[HISTOGRAM_BUCKETS + 1];

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    const char *data = natsMsg_GetData(msg);
    uint64_t now = now_ns(), stamp = 0;

    if (natsMsg_GetDataLength(msg) >= 17 && data[0] == '@')
        stamp = strtoull(data + 1, NULL, 16);
    if (stamp && now >= stamp) {
        uint64_t bucket = (now - stamp) / 1000 / BUCKET_US;
        atomic_fetch_add(&histogram[bucket < HISTOGRAM_BUCKETS ? bucket : HISTOGRAM_BUCKETS], 1);
    }
    atomic_store(&last_delivery_ns, now);
    atomic_fetch_add(&deliveries, 1);
    natsMsg_Destroy(msg);
}

static double percentile_us(double p)
{
    uint64_t total = 0, seen = 0;

    for (int i = 0; i <= HISTOGRAM_BUCKETS; i++)
        total += atomic_load(&histogram[i]);
    for (int i = 0; i <= HISTOGRAM_BUCKETS; i++) {
        seen += atomic_load(&histogram[i]);
        if (total && (double)seen >= p * (double)total)
            return (double)((i + 1) * BUCKET_US);
    }
    return 0;
}

static natsConnection *connect_to(const char *url)
{
    natsConnection *nc = NULL;
    natsOptions *o = NULL;

    if (natsOptions_Create(&o) != NATS_OK || natsOptions_SetURL(o, url) != NATS_OK ||
        natsOptions_UseGlobalMessageDelivery(o, true) != NATS_OK ||
        natsConnection_Connect(&nc, o) != NATS_OK) {
        fprintf(stderr, "js_fanout: cannot connect to %s\n", url);
        exit(1);
    }
    natsOptions_Destroy(o);
    return nc;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"pub", required_argument, NULL, 'p'},      {"sub", required_argument, NULL, 's'},
        {"size", required_argument, NULL, 'z'},     {"rate", required_argument, NULL, 'R'},
        {"replicas", required_argument, NULL, 'r'}, {NULL, 0, NULL, 0},
    };
    const char *pub_url = NULL, *sub_list = NULL, *sub_urls[MAX_SUB_URLS];
    int k = 100, frames = 5000, size = 200, rate = 0, replicas = 1, nsub = 0, opt;
    char stream[64], subject[96], *subs_copy, *save = NULL, *tok;
    natsConnection *pub, *subc[MAX_SUB_URLS];
    jsCtx *pjs, *sjs[MAX_SUB_URLS];
    natsSubscription **subs;
    jsStreamConfig cfg;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    jsOptions jo;
    const char *subjects[1];
    uint64_t first_ns, expected;
    char *payload;
    double seconds;

    while ((opt = getopt_long(argc, argv, "k:n:", options, NULL)) != -1) {
        switch (opt) {
        case 'p':
            pub_url = optarg;
            break;
        case 's':
            sub_list = optarg;
            break;
        case 'z':
            size = atoi(optarg);
            break;
        case 'R':
            rate = atoi(optarg);
            break;
        case 'r':
            replicas = atoi(optarg);
            break;
        case 'k':
            k = atoi(optarg);
            break;
        case 'n':
            frames = atoi(optarg);
            break;
        default:
            fputs("usage: js_fanout --pub URL --sub URL[,URL] [-k K] [-n N] [--size B] "
                  "[--rate R] [--replicas N]\n",
                  stderr);
            return 2;
        }
    }
    if (!pub_url || !sub_list || k <= 0 || frames <= 0 || size < 17) {
        fputs("js_fanout: --pub and --sub are needed\n", stderr);
        return 2;
    }
    subs_copy = strdup(sub_list);
    for (tok = strtok_r(subs_copy, ",", &save); tok && nsub < MAX_SUB_URLS;
         tok = strtok_r(NULL, ",", &save))
        sub_urls[nsub++] = tok;

    pub = connect_to(pub_url);
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 65536;
    natsConnection_JetStream(&pjs, pub, &jo);
    snprintf(stream, sizeof(stream), "BENCH_RAW_%d", (int)getpid());
    snprintf(subject, sizeof(subject), "benchraw.%d.sess-1", (int)getpid());
    subjects[0] = subject;
    jsStreamConfig_Init(&cfg);
    cfg.Name = stream;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = replicas;
    cfg.MaxBytes = (int64_t)512 * 1024 * 1024;
    cfg.Discard = js_DiscardOld;
    cfg.Duplicates = (int64_t)120 * 1000 * 1000 * 1000;
    cfg.AllowDirect = true;
    if (js_AddStream(&si, pjs, &cfg, NULL, &jerr) != NATS_OK) {
        fprintf(stderr, "js_fanout: cannot create the stream (%d)\n", (int)jerr);
        return 1;
    }
    jsStreamInfo_Destroy(si);

    for (int i = 0; i < nsub; i++) {
        subc[i] = connect_to(sub_urls[i]);
        natsConnection_JetStream(&sjs[i], subc[i], NULL);
    }
    subs = calloc((size_t)k, sizeof(*subs));
    for (int i = 0; i < k; i++) {
        jsSubOptions so;
        jsSubOptions_Init(&so);
        so.Stream = stream;
        so.Ordered = true;
        if (js_Subscribe(&subs[i], sjs[i % nsub], subject, on_msg, NULL, NULL, &so, &jerr) !=
            NATS_OK) {
            fprintf(stderr, "js_fanout: consumer %d: %d\n", i, (int)jerr);
            return 1;
        }
        natsSubscription_SetPendingLimits(subs[i], -1, -1);
    }
    nats_Sleep(500);

    payload = malloc((size_t)size);
    memset(payload, 'x', (size_t)size);
    first_ns = now_ns();
    for (int i = 0; i < frames; i++) {
        if (rate > 0) {
            uint64_t due = first_ns + (uint64_t)i * 1000000000u / (uint64_t)rate;
            uint64_t now = now_ns();
            if (due > now)
                nats_Sleep((int64_t)((due - now) / 1000000));
        }
        snprintf(payload, 18, "@%016" PRIx64, now_ns());
        payload[17] = 'x';
        if (js_PublishAsync(pjs, subject, payload, size, NULL) != NATS_OK) {
            fprintf(stderr, "js_fanout: publish %d failed\n", i);
            break;
        }
    }
    js_PublishAsyncComplete(pjs, NULL);
    expected = (uint64_t)frames * (uint64_t)k;
    for (int waited = 0; atomic_load(&deliveries) < expected && waited < 60000; waited += 50)
        nats_Sleep(50);
    seconds = (double)(atomic_load(&last_delivery_ns) - first_ns) / 1e9;
    printf("raw JetStream: K=%d frames=%d size=%d rate=%s replicas=%d\n", k, frames, size,
           rate ? "paced" : "max", replicas);
    printf("  deliveries: %llu of %" PRIu64 " in %.3f s = %.0f deliveries/s\n",
           (unsigned long long)atomic_load(&deliveries), expected, seconds,
           seconds > 0 ? (double)atomic_load(&deliveries) / seconds : 0.0);
    printf("  publish-to-delivery: p50 %.0f us, p99 %.0f us\n", percentile_us(0.50),
           percentile_us(0.99));

    for (int i = 0; i < k; i++) {
        natsSubscription_Unsubscribe(subs[i]);
        natsSubscription_Destroy(subs[i]);
    }
    js_DeleteStream(pjs, stream, NULL, NULL);
    for (int i = 0; i < nsub; i++) {
        jsCtx_Destroy(sjs[i]);
        natsConnection_Destroy(subc[i]);
    }
    jsCtx_Destroy(pjs);
    natsConnection_Destroy(pub);
    free(subs);
    free(payload);
    free(subs_copy);
    nats_CloseAndWait(2000);
    return 0;
}
