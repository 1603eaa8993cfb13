/* store_fixture: see store_fixture.h. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/import.h"
#include "store_fixture.h"

const char STORE_FIXTURE_WORLD_JSON[] =
    "{\"accounts\": ["
    "{\"id\": \"admin\", \"kind\": \"human\", \"admin\": true, \"tokens\": [\"t-admin\"]},"
    "{\"id\": \"alice\", \"kind\": \"human\", \"tokens\": [\"t-alice\"]},"
    "{\"id\": \"bob\", \"kind\": \"human\", \"tokens\": [\"t-bob\"]},"
    "{\"id\": \"carol\", \"kind\": \"human\", \"tokens\": [\"t-carol\"]},"
    "{\"id\": \"agent-1\", \"kind\": \"agent\", \"home_channel\": \"chan-a\", "
    "\"tokens\": [\"t-agent-1\"]},"
    "{\"id\": \"agent-2\", \"kind\": \"agent\", \"home_channel\": \"chan-b\", "
    "\"tokens\": [\"t-agent-2\"]}],"
    "\"channels\": [{\"id\": \"chan-a\", \"members\": [\"alice\", \"bob\", \"agent-1\"]},"
    "{\"id\": \"chan-b\", \"members\": [\"carol\", \"agent-2\"]}],"
    "\"runners\": [{\"id\": \"runner-1\", \"tokens\": [\"t-runner-1\"]},"
    "{\"id\": \"runner-2\", \"tokens\": [\"t-runner-2\"]}],"
    "\"containers\": [{\"name\": \"ctr-1\", \"agent_account\": \"agent-1\", \"runner\": "
    "\"runner-1\"},"
    "{\"name\": \"ctr-2\", \"agent_account\": \"agent-2\", \"runner\": \"runner-2\"}],"
    "\"sessions\": [{\"id\": \"sess-1\", \"container\": \"ctr-1\", \"owner\": \"alice\"},"
    "{\"id\": \"sess-2\", \"container\": \"ctr-2\", \"owner\": \"carol\"}]}";

void store_fixture_open(struct store_fixture *fx)
{
    char err[256];

    memset(fx, 0, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/agenthub-test-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        perror("mkdtemp");
        abort();
    }
    snprintf(fx->db, sizeof(fx->db), "%s/agenthub.db", fx->dir);
    if (sqlite_store_open(fx->db, &fx->s, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "fixture: %s\n", err);
        abort();
    }
}

struct store *store_fixture_second_handle(const struct store_fixture *fx)
{
    struct store *s = NULL;
    char err[256];

    if (sqlite_store_open(fx->db, &s, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "fixture: %s\n", err);
        abort();
    }
    return s;
}

void store_fixture_world(struct store_fixture *fx)
{
    json_error_t jerr;
    json_t *root = json_loads(STORE_FIXTURE_WORLD_JSON, 0, &jerr);
    char err[512];

    if (!root) {
        fprintf(stderr, "fixture: bad world JSON: %s\n", jerr.text);
        abort();
    }
    if (store_import_json(fx->s, root, NULL, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "fixture: import: %s\n", err);
        abort();
    }
    json_decref(root);
}

void store_fixture_close(struct store_fixture *fx)
{
    char path[400];
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    size_t i;

    store_close(fx->s);
    fx->s = NULL;
    for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", fx->db, suffixes[i]);
        unlink(path);
    }
    rmdir(fx->dir);
}

void store_fixture_scribble(const char *path)
{
    struct stat sb;
    char buf[4096];
    off_t off;
    int fd = open(path, O_WRONLY);

    if (fd < 0)
        return;
    if (fstat(fd, &sb) == 0) {
        memset(buf, 0xA5, sizeof(buf));
        for (off = 0; off < sb.st_size; off += (off_t)sizeof(buf))
            if (pwrite(fd, buf, sizeof(buf), off) < 0)
                break;
    }
    close(fd);
}

int store_fixture_file_contains(const char *path, const char *needle)
{
    size_t n = strlen(needle), len, i;
    char *data;
    FILE *f = fopen(path, "rb");
    long sz;
    int found = 0;

    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc(sz > 0 ? (size_t)sz : 1);
    len = data ? fread(data, 1, (size_t)sz, f) : 0;
    fclose(f);
    for (i = 0; n > 0 && i + n <= len && !found; i++)
        found = memcmp(data + i, needle, n) == 0;
    free(data);
    return found;
}
