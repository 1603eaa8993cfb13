/* store_template: see store_template.h. */
#include "store_template.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/import.h"
#include "store_fixture.h"

static char dir[64], db_path[128];
static uint8_t *template_db;
static size_t template_len;

/* Removes PATH and what is below it, a few levels deep. */
static void remove_tree(const char *path, int depth)
{
    DIR *d;
    struct dirent *e;
    char child[512];

    if (unlink(path) == 0 || depth < 0 || (d = opendir(path)) == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(child, sizeof(child), "%s/%s", path, e->d_name);
        remove_tree(child, depth - 1);
    }
    closedir(d);
    rmdir(path);
}

static void remove_dir(void)
{
    remove_tree(dir, 4);
}

void store_template_init(void)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    json_t *root = json_loads(STORE_FIXTURE_WORLD_JSON, 0, NULL);
    struct store *s = NULL;
    char err[256] = "", path[160];
    struct stat st;
    int fd;

    snprintf(dir, sizeof(dir), "%s/agenthub-fuzz-XXXXXX", base);
    if (!mkdtemp(dir))
        abort();
    atexit(remove_dir);
    snprintf(db_path, sizeof(db_path), "%s/store.db", dir);
    snprintf(path, sizeof(path), "%s/template.db", dir);
    if (!root || sqlite_store_open(path, &s, err, sizeof(err)) != STORE_OK ||
        store_import_json(s, root, NULL, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "store_template: cannot provision: %s\n", err);
        abort();
    }
    json_decref(root);
    store_close(s); /* the last connection checkpoints the WAL into the file */
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0)
        abort();
    template_len = (size_t)st.st_size;
    template_db = malloc(template_len);
    if (!template_db || read(fd, template_db, template_len) != (ssize_t)template_len)
        abort();
    close(fd);
}

struct store *store_template_fresh(void)
{
    struct store *s = NULL;
    char err[256], side[160];
    int fd = open(db_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fd < 0 || write(fd, template_db, template_len) != (ssize_t)template_len)
        abort();
    close(fd);
    snprintf(side, sizeof(side), "%s-wal", db_path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", db_path);
    unlink(side);
    if (sqlite_store_open(db_path, &s, err, sizeof(err)) != STORE_OK) {
        fprintf(stderr, "store_template: %s\n", err);
        abort();
    }
    return s;
}

const char *store_template_dir(void)
{
    return dir;
}
