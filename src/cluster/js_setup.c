/* js_setup: the blocking JetStream requests a link makes on its setup
 * thread: once, the streams, the cluster epoch and the two ordered
 * consumers (js_link.h); then, when asked, lookups in the heads stream. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cluster/js_link_internal.h"
#include "common/failpoint.h"
#include "common/log.h"

/* --- setup thread ----------------------------------------------------------- */

/* Creates the stream CFG describes, or accepts the one of its name that
 * exists.  An existing stream is asked for first: creates racing each
 * other are what makes JetStream replace a stream (settle), and
 * nats-server 2.10 does not answer a create of a sourced stream that
 * exists.  Returns 0, or -1. */
static int ensure_stream(struct js_link *link, const jsStreamConfig *cfg)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, link->js, cfg->Name, NULL, &jerr);

    if (s != NATS_OK) {
        s = js_AddStream(&si, link->js, (jsStreamConfig *)cfg, NULL, &jerr);
        if (s != NATS_OK && jerr == JSStreamNameExistErr)
            s = NATS_OK;
    }
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK) {
        log_warn("cluster: stream %s: %s (%d)", cfg->Name, natsStatus_GetText(s), (int)jerr);
        return -1;
    }
    return 0;
}

/* A log stream NAME on SUBJECT, bounded by MAX_BYTES, oldest first, made
 * with DESCRIPTION (or none) when it does not exist.  Returns 0, or -1. */
static int ensure_log(struct js_link *link, const char *name, const char *subject, size_t max_bytes,
                      const char *description)
{
    const char *subjects[1] = {subject};
    jsStreamConfig cfg;

    jsStreamConfig_Init(&cfg);
    cfg.Name = name;
    cfg.Description = description;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = link->config.replicas;
    cfg.MaxBytes = (int64_t)max_bytes;
    cfg.Discard = js_DiscardOld;
    cfg.Duplicates = (int64_t)120 * 1000 * 1000 * 1000; /* 2 min, in ns */
    cfg.AllowDirect = true;
    return ensure_stream(link, &cfg);
}

/* AGENTHUB_HEADS: the servers copy every message of AGENTHUB_FRAMES into
 * it (a source), and it keeps only the newest of each subject, so a
 * session's latest batch outlives the frames stream's eviction of it.
 * Bounded like the frames stream; holding one batch per session, it
 * evicts only past that many sessions' worth.  Returns 0, or -1. */
static int ensure_heads(struct js_link *link)
{
    jsStreamSource source = {.Name = JS_FRAMES_STREAM, .FilterSubject = JS_FRAMES_PREFIX ">"};
    jsStreamSource *sources[1] = {&source};
    jsStreamConfig cfg;

    jsStreamConfig_Init(&cfg);
    cfg.Name = JS_HEADS_STREAM;
    cfg.Sources = sources;
    cfg.SourcesLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = link->config.replicas;
    cfg.MaxBytes = (int64_t)link->config.frames_max_bytes;
    cfg.MaxMsgsPerSubject = 1;
    cfg.Discard = js_DiscardOld;
    return ensure_stream(link, &cfg);
}

/* Waits, at most 10 s, until the heads stream's source runs: a stream just
 * made starts copying a second or so later, and a session whose messages
 * the frames stream evicted before that would have no head.  Past the
 * wait the node goes on, and says so. */
static void wait_heads_source(struct js_link *link)
{
    for (int i = 0; i < 100 && !atomic_load(&link->stopping); i++) {
        jsStreamInfo *si = NULL;
        int active = 0;

        if (js_GetStreamInfo(&si, link->js, JS_HEADS_STREAM, NULL, NULL) == NATS_OK)
            active = si->SourcesLen > 0 && si->Sources[0]->Active >= 0;
        jsStreamInfo_Destroy(si);
        if (active)
            return;
        nats_Sleep(100);
    }
    log_warn("cluster: stream %s: its copy of %s has not started after 10 s", JS_HEADS_STREAM,
             JS_FRAMES_STREAM);
}

/* Binds the bucket AGENTHUB_CLUSTER into *KV, made first when it does not
 * exist.  Returns 0, or -1. */
static int open_bucket(struct js_link *link, kvStore **kv)
{
    kvConfig kc;
    natsStatus s = js_KeyValue(kv, link->js, JS_CLUSTER_BUCKET);

    if (s != NATS_OK) {
        kvConfig_Init(&kc);
        kc.Bucket = JS_CLUSTER_BUCKET;
        kc.StorageType = js_FileStorage;
        kc.Replicas = link->config.replicas;
        kc.History = 1;
        s = js_CreateKeyValue(kv, link->js, &kc);
        if (s != NATS_OK)
            s = js_KeyValue(kv, link->js, JS_CLUSTER_BUCKET);
    }
    if (s != NATS_OK) {
        log_warn("cluster: bucket %s: %s", JS_CLUSTER_BUCKET, natsStatus_GetText(s));
        return -1;
    }
    return 0;
}

/* The streams whose identity a node relies on: the logs, and the bucket
 * holding the bus epoch (a KV bucket is the stream KV_<bucket>). */
static const char *const settled_streams[] = {JS_FRAMES_STREAM, JS_HEADS_STREAM, JS_BUS_STREAM,
                                              ("KV_" JS_CLUSTER_BUCKET)};
#define SETTLED_STREAMS (sizeof(settled_streams) / sizeof(settled_streams[0]))
/* A stream made longer ago than this is taken as settled at once. */
#define SETTLE_AGE_NS ((int64_t)30 * 1000 * 1000 * 1000)

/* Reads the creation time of each of settled_streams into OUT.  Returns 0,
 * or -1 when one cannot be read. */
static int streams_created(struct js_link *link, int64_t out[SETTLED_STREAMS])
{
    for (size_t i = 0; i < SETTLED_STREAMS; i++) {
        jsStreamInfo *si = NULL;
        if (js_GetStreamInfo(&si, link->js, settled_streams[i], NULL, NULL) != NATS_OK)
            return -1;
        out[i] = si->Created;
        jsStreamInfo_Destroy(si);
    }
    return 0;
}

/* Waits until no stream is being made again.  nats-server 2.10 can answer
 * two nodes' racing creates of one stream each with success and then keep
 * the later one, made up to a second after: what a node read of the first
 * (its creation time, the bus epoch in its description; frames written
 * into it) would be gone.  A stream made in the last 30 s (by this node's clock) is
 * therefore read again a second later, until two reads agree.  Returns 0,
 * or -1 when the streams cannot be read or keep changing (the setup is
 * tried again). */
static int settle(struct js_link *link)
{
    int64_t before[SETTLED_STREAMS], after[SETTLED_STREAMS];
    struct timespec now;

    if (streams_created(link, before) != 0)
        return -1;
    for (int round = 0; round < 20 && !atomic_load(&link->stopping); round++) {
        int young = 0;
        clock_gettime(CLOCK_REALTIME, &now);
        for (size_t i = 0; i < SETTLED_STREAMS; i++)
            young |= (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - before[i] < SETTLE_AGE_NS;
        if (!young)
            return 0;
        nats_Sleep(1000);
        if (streams_created(link, after) != 0)
            return -1;
        if (memcmp(before, after, sizeof(before)) == 0)
            return 0;
        log_info("cluster: a stream was made again by a node starting at the same time; "
                 "waiting for the streams to settle");
        memcpy(before, after, sizeof(before));
    }
    return -1;
}

/* A random epoch, never 0. */
static uint64_t draw_epoch(void)
{
    uint64_t epoch = 0;

    while (epoch == 0 && getrandom(&epoch, sizeof(epoch), 0) != (ssize_t)sizeof(epoch))
        epoch = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return epoch | 1;
}

/* The bus stream's description: "bus2" (bus seqs are stream sequence *
 * 1024 + index, js_link.h) and the bus epoch its creator drew.  The epoch
 * is part of the stream's configuration, which JetStream keeps with the
 * stream on every server that holds it: every node reads the same one
 * for as long as the stream lives, whichever server answers, and a
 * stream made anew (its seqs start again) carries a new one. */
#define BUS_DESCRIPTION_PREFIX "agenthub event bus, bus2 epoch "

/* The epoch in the bus stream's DESCRIPTION, or 0 for a stream made
 * before epochs were kept there. */
static uint64_t described_epoch(const char *description)
{
    size_t n = strlen(BUS_DESCRIPTION_PREFIX);
    char *end;
    uint64_t epoch;

    if (!description || strncmp(description, BUS_DESCRIPTION_PREFIX, n) != 0)
        return 0;
    errno = 0;
    epoch = strtoull(description + n, &end, 10);
    return errno == 0 && *end == '\0' && end != description + n ? epoch : 0;
}

/* The bus epoch of a bus stream made before its description held it: the
 * one kept in bucket KV under the stream's creation time CREATED, drawn by
 * the first node to reach it.  Returns 0 on failure. */
static uint64_t cluster_epoch(kvStore *kv, int64_t created)
{
    kvEntry *e = NULL;
    char key[64], value[24];
    uint64_t epoch, rev;

    /* "bus2": a stream numbered the older way (one event per message) gets
     * a new epoch, so a client resuming with an older seq is told to
     * resync. */
    snprintf(key, sizeof(key), "bus2-epoch.%" PRId64, created);
    snprintf(value, sizeof(value), "%" PRIu64, draw_epoch());
    /* Only the first create wins; everyone then reads the winner's. */
    (void)kvStore_CreateString(&rev, kv, key, value);
    epoch = 0;
    if (kvStore_Get(&e, kv, key) == NATS_OK) {
        epoch = strtoull(kvEntry_ValueString(e), NULL, 10);
        kvEntry_Destroy(e);
    }
    return epoch;
}

natsSubscription *js_link_ordered_consumer(struct js_link *link, const char *stream,
                                           const char *subject, natsMsgHandler cb, void *closure,
                                           uint64_t from)
{
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    natsStatus s;

    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = from ? js_DeliverByStartSequence : js_DeliverAll;
    so.Config.OptStartSeq = from;
    /* A consumer that died with its server is noticed in about 3 s. */
    so.Config.Heartbeat = (int64_t)1000 * 1000 * 1000;
    /* One whose node died, or that a node replaced while cut off (its
     * delete never arrived), is removed by the servers after 5 s without
     * interest: left behind, it would keep their health check failing. */
    so.Config.InactiveThreshold = (int64_t)5 * 1000 * 1000 * 1000;
    s = js_Subscribe(&sub, link->js, subject, cb, closure, NULL, &so, &jerr);
    if (s != NATS_OK) {
        log_warn("cluster: consumer of %s on %s: %s (%d)", subject, stream, natsStatus_GetText(s),
                 (int)jerr);
        return NULL;
    }
    /* Deliveries queue in the loop's memory, not libnats's: no slow-consumer
     * drops while the loop is busy. */
    natsSubscription_SetPendingLimits(sub, -1, -1);
    return sub;
}

static natsSubscription *ordered_consumer(struct js_link *link, const char *stream,
                                          const char *subject, natsMsgHandler cb, uint64_t from)
{
    return js_link_ordered_consumer(link, stream, subject, cb, link, from);
}

/* Streams, epoch, consumers.  Returns 0 when all are in place. */
static int setup_once(struct js_link *link)
{
    jsStreamInfo *frames = NULL, *bus = NULL;
    kvStore *kv = NULL;
    struct js_event *ev;
    jsErrCode jerr = 0;
    uint64_t epoch;
    char bus_description[sizeof(BUS_DESCRIPTION_PREFIX) + 24];
    int rv = -1;
    size_t frames_bytes = link->config.frames_max_bytes, bus_bytes = link->config.bus_max_bytes;

    snprintf(bus_description, sizeof(bus_description), BUS_DESCRIPTION_PREFIX "%" PRIu64,
             draw_epoch());
    if (ensure_log(link, JS_FRAMES_STREAM, JS_FRAMES_PREFIX ">", frames_bytes, NULL) != 0 ||
        ensure_log(link, JS_BUS_STREAM, JS_BUS_SUBJECT, bus_bytes, bus_description) != 0)
        goto out;
    /* Tests: the bus stream this node made or found is replaced right
     * after, as JetStream does with one of two racing creates. */
    if (!link->bus_replaced && failpoint_active("cluster.bus_replaced_once")) {
        link->bus_replaced = 1;
        nats_Sleep(5); /* a later creation time, to the nanosecond */
        if (js_DeleteStream(link->js, JS_BUS_STREAM, NULL, NULL) == NATS_OK)
            (void)ensure_log(link, JS_BUS_STREAM, JS_BUS_SUBJECT, bus_bytes, bus_description);
    }
    if (ensure_heads(link) != 0 || open_bucket(link, &kv) != 0 || settle(link) != 0)
        goto out;
    /* Read once the streams settled: what a create answered may be of a
     * stream JetStream then replaced. */
    if (js_GetStreamInfo(&frames, link->js, JS_FRAMES_STREAM, NULL, &jerr) != NATS_OK ||
        js_GetStreamInfo(&bus, link->js, JS_BUS_STREAM, NULL, &jerr) != NATS_OK)
        goto out;
    wait_heads_source(link);
    epoch = described_epoch(bus->Config ? bus->Config->Description : NULL);
    if (epoch == 0) {
        epoch = cluster_epoch(kv, bus->Created);
        if (epoch == 0)
            goto out;
        log_info("cluster: bus epoch %" PRIu64 " from bucket %s (stream %s made at %" PRId64
                 " ns, before epochs were kept in its description)",
                 epoch, JS_CLUSTER_BUCKET, JS_BUS_STREAM, bus->Created);
    }
    ev = js_link_event_alloc(JS_EV_READY);
    if (!ev)
        goto out;
    /* READY is queued before the first delivery, so the loop knows where
     * the replay ends before it applies anything. */
    ev->epoch = epoch;
    /* A stream whose messages are all gone delivers nothing to wait for;
     * a node reading sessions on demand waits for none of them here. */
    ev->frames_last = frames->State.Msgs && !link->config.on_demand ? frames->State.LastSeq : 0;
    ev->bus_last = bus->State.Msgs ? bus->State.LastSeq : 0;
    js_link_post(link, ev);
    if (!link->config.on_demand) {
        link->frames_sub = ordered_consumer(link, JS_FRAMES_STREAM, JS_FRAMES_PREFIX ">",
                                            js_link_on_frames_msg, 0);
        if (!link->frames_sub)
            goto out; /* A READY went out already: the next try sends another. */
    }
    link->bus_sub = ordered_consumer(link, JS_BUS_STREAM, JS_BUS_SUBJECT, js_link_on_bus_msg, 0);
    rv = link->bus_sub ? 0 : -1;
    if (rv != 0 && link->frames_sub) {
        natsSubscription_Unsubscribe(link->frames_sub);
        natsSubscription_Destroy(link->frames_sub);
        link->frames_sub = NULL;
    }
out:
    if (kv)
        kvStore_Destroy(kv);
    jsStreamInfo_Destroy(frames);
    jsStreamInfo_Destroy(bus);
    return rv;
}

/* After a reconnect: new consumers from the first message not yet
 * delivered, in case the old ones died with the server they were on (an
 * ordered consumer lives on one server).  What both deliver twice the
 * loop applies once.  Returns 0, or -1 to try again. */
static int resubscribe(struct js_link *link)
{
    natsSubscription *frames = NULL, *bus;

    if (!link->config.on_demand) {
        frames = ordered_consumer(link, JS_FRAMES_STREAM, JS_FRAMES_PREFIX ">",
                                  js_link_on_frames_msg, atomic_load(&link->frames_next));
        if (!frames)
            return -1;
    }
    bus = ordered_consumer(link, JS_BUS_STREAM, JS_BUS_SUBJECT, js_link_on_bus_msg,
                           atomic_load(&link->bus_next));
    if (!bus || js_watch_resubscribe(link) != 0) {
        if (frames) {
            natsSubscription_Unsubscribe(frames);
            natsSubscription_Destroy(frames);
        }
        if (bus) {
            natsSubscription_Unsubscribe(bus);
            natsSubscription_Destroy(bus);
        }
        return -1;
    }
    if (link->frames_sub) {
        natsSubscription_Unsubscribe(link->frames_sub);
        natsSubscription_Destroy(link->frames_sub);
    }
    natsSubscription_Unsubscribe(link->bus_sub);
    natsSubscription_Destroy(link->bus_sub);
    link->frames_sub = frames;
    link->bus_sub = bus;
    log_info("cluster: consumers made again after a reconnect");
    return 0;
}

/* The stream sequence in AGENTHUB_FRAMES of MSG, a message the heads
 * stream sourced from it (header "Nats-Stream-Source: AGENTHUB_FRAMES
 * <seq> ..."); 0 when it does not say. */
static uint64_t sourced_seq(natsMsg *msg)
{
    const char *source = NULL;
    size_t n = strlen(JS_FRAMES_STREAM);

    if (natsMsgHeader_Get(msg, "Nats-Stream-Source", &source) != NATS_OK || !source ||
        strncmp(source, JS_FRAMES_STREAM, n) != 0 || source[n] != ' ')
        return 0;
    return strtoull(source + n + 1, NULL, 10);
}

/* Looks L up in the heads stream (blocking, at most the publish wait) and
 * queues the outcome for the loop in L's event. */
static void lookup(struct js_link *link, struct js_lookup *l)
{
    struct js_event *ev = l->ev;
    natsMsg *msg = NULL;
    jsErrCode jerr = 0;
    jsOptions jo;
    natsStatus s = NATS_ERR;

    l->ev = NULL;
    if (atomic_load(&link->connected)) {
        jsOptions_Init(&jo);
        jo.Wait = link->config.publish_wait_ms;
        s = js_GetLastMsg(&msg, link->js, JS_HEADS_STREAM, l->subject, &jo, &jerr);
    }
    if (s == NATS_OK && (ev->seq = sourced_seq(msg)) != 0) {
        /* Whether the frames stream still holds it: then a consumer of the
         * subject delivers it; else it was evicted before. */
        natsMsg *live = NULL;
        natsStatus g;
        jerr = 0;
        g = js_GetMsg(&live, link->js, JS_FRAMES_STREAM, ev->seq, &jo, &jerr);
        natsMsg_Destroy(live);
        if (g == NATS_OK || g == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr) {
            ev->msg = msg;
            ev->last = g == NATS_OK ? JS_LAST_LIVE : JS_LAST_FOUND;
        } else {
            natsMsg_Destroy(msg);
        }
    } else {
        natsMsg_Destroy(msg);
        if (s == NATS_NOT_FOUND || jerr == JSNoMessageFoundErr)
            ev->last = JS_LAST_NONE;
    }
    js_link_post(link, ev);
}

void *js_link_setup_main(void *arg)
{
    struct js_link *link = arg;
    int ready = 0;

    while (!atomic_load(&link->stopping)) {
        struct js_lookup *l;
        struct timespec until;

        if (!ready && atomic_load(&link->connected) && setup_once(link) == 0) {
            ready = 1;
            atomic_store(&link->resubscribe, 0);
        }
        if (ready && atomic_load(&link->connected) && atomic_exchange(&link->resubscribe, 0) &&
            resubscribe(link) != 0)
            atomic_store(&link->resubscribe, 1);
        if (ready && atomic_load(&link->connected))
            js_watch_run_ops(link);
        js_watch_reap(link);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)JS_SETUP_RETRY_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&link->lock);
        if (!link->lookups_head && !(ready && link->watch_ops_head) &&
            !atomic_load(&link->stopping))
            pthread_cond_timedwait(&link->setup_cond, &link->lock, &until);
        l = link->lookups_head;
        link->lookups_head = link->lookups_tail = NULL;
        pthread_mutex_unlock(&link->lock);
        while (l) {
            struct js_lookup *next = l->next;
            if (!atomic_load(&link->stopping))
                lookup(link, l);
            js_link_lookup_free(l);
            l = next;
        }
    }
    return NULL;
}
