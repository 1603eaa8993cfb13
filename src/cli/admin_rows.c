/* agenthub admin: add, remove and list for accounts, channels, members,
 * runners, containers and sessions.  Text lists are tab-separated, one row
 * per line; --json prints an array of objects. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/admin.h"

static const char accounts_usage[] =
    "usage: agenthub admin --db PATH accounts add ID [--kind human|agent] [--admin]\n"
    "                                             [--home-channel CHANNEL]\n"
    "       agenthub admin --db PATH accounts remove ID\n"
    "       agenthub admin --db PATH accounts list [--json]\n"
    "add creates the account or updates it to match.  Only agent accounts have a\n"
    "home channel.  remove also drops its tokens and memberships; it is refused\n"
    "while a container or session refers to the account.\n";

static const char channels_usage[] =
    "usage: agenthub admin --db PATH channels add ID\n"
    "       agenthub admin --db PATH channels remove ID\n"
    "       agenthub admin --db PATH channels list [--json]\n"
    "remove is refused while the channel is an agent's home channel.\n";

static const char members_usage[] =
    "usage: agenthub admin --db PATH members add ACCOUNT CHANNEL\n"
    "       agenthub admin --db PATH members remove ACCOUNT CHANNEL\n"
    "       agenthub admin --db PATH members list [--channel CHANNEL] [--json]\n"
    "A member of an agent's home channel may watch that agent's sessions.\n";

static const char runners_usage[] = "usage: agenthub admin --db PATH runners add ID\n"
                                    "       agenthub admin --db PATH runners remove ID\n"
                                    "       agenthub admin --db PATH runners list [--json]\n"
                                    "remove is refused while a container is on the Runner.\n";

static const char containers_usage[] =
    "usage: agenthub admin --db PATH containers add NAME --agent ACCOUNT --runner RUNNER\n"
    "       agenthub admin --db PATH containers remove NAME\n"
    "       agenthub admin --db PATH containers list [--runner RUNNER] [--json]\n"
    "add creates the container or moves it to match.  remove is refused while it\n"
    "has sessions.\n";

static const char sessions_usage[] =
    "usage: agenthub admin --db PATH sessions add [ID] --container NAME [--owner ACCOUNT]\n"
    "                                  [--provider P] [--native-id N]\n"
    "       agenthub admin --db PATH sessions close ID\n"
    "       agenthub admin --db PATH sessions remove ID\n"
    "       agenthub admin --db PATH sessions list [--runner R] [--container NAME] [--open]\n"
    "                                  [--json]\n"
    "add without ID mints one and prints it.\n";

const char *admin_rows_usage(const char *group)
{
    if (strcmp(group, "accounts") == 0)
        return accounts_usage;
    if (strcmp(group, "channels") == 0)
        return channels_usage;
    if (strcmp(group, "members") == 0)
        return members_usage;
    if (strcmp(group, "runners") == 0)
        return runners_usage;
    if (strcmp(group, "containers") == 0)
        return containers_usage;
    if (strcmp(group, "sessions") == 0)
        return sessions_usage;
    return NULL;
}

/* Prints JSON array ARR (when --json) and returns the exit status for RC. */
static int finish_list(json_t *arr, int rc, const char *what)
{
    if (rc == STORE_OK && arr) {
        json_dumpf(arr, stdout, JSON_INDENT(2));
        fputc('\n', stdout);
    }
    json_decref(arr);
    return admin_report(rc, what);
}

/* Fails with a usage error unless ID exists as KIND. */
static int need(struct store *s, enum store_entity kind, const char *what, const char *id)
{
    int rc = s->ops->exists(s->impl, kind, id);

    if (rc == STORE_NOT_FOUND) {
        fprintf(stderr, "agenthub admin: no %s \"%s\"\n", what, id);
        return ADMIN_USAGE;
    }
    return admin_report(rc, what);
}

/* --- accounts --- */

static int print_account(const struct store_account *a, void *arg)
{
    const char *kind = a->kind == STORE_ACCOUNT_AGENT ? "agent" : "human";

    if (arg)
        json_array_append_new(arg, json_pack("{s:s, s:s, s:b, s:s?}", "id", a->id, "kind", kind,
                                             "admin", a->is_admin, "home_channel",
                                             a->home_channel_id[0] ? a->home_channel_id : NULL));
    else
        printf("%s\t%s\t%s\t%s\n", a->id, kind, a->is_admin ? "admin" : "-",
               a->home_channel_id[0] ? a->home_channel_id : "-");
    return 0;
}

static int accounts_add(struct store *s, const struct admin_opts *o)
{
    struct store_account a;
    int rv;

    memset(&a, 0, sizeof(a));
    if (o->npos != 2 || !store_id_valid(o->pos[1])) {
        fputs(accounts_usage, stderr);
        return ADMIN_USAGE;
    }
    snprintf(a.id, sizeof(a.id), "%s", o->pos[1]);
    if (!o->kind || strcmp(o->kind, "human") == 0)
        a.kind = STORE_ACCOUNT_HUMAN;
    else if (strcmp(o->kind, "agent") == 0)
        a.kind = STORE_ACCOUNT_AGENT;
    else {
        fprintf(stderr, "agenthub admin: --kind is human or agent\n");
        return ADMIN_USAGE;
    }
    a.is_admin = o->admin;
    if (o->home_channel) {
        if (a.kind != STORE_ACCOUNT_AGENT) {
            fprintf(stderr, "agenthub admin: only agent accounts have a home channel\n");
            return ADMIN_USAGE;
        }
        rv = need(s, STORE_ENTITY_CHANNEL, "channel", o->home_channel);
        if (rv != ADMIN_OK)
            return rv;
        snprintf(a.home_channel_id, sizeof(a.home_channel_id), "%s", o->home_channel);
    }
    return admin_report(s->ops->account_put(s->impl, &a, NULL), "accounts add");
}

static int accounts_main(struct store *s, const char *verb, const struct admin_opts *o)
{
    if (strcmp(verb, "add") == 0)
        return accounts_add(s, o);
    if (strcmp(verb, "remove") == 0 && o->npos == 2)
        return admin_report(s->ops->remove(s->impl, STORE_ENTITY_ACCOUNT, o->pos[1]),
                            "accounts remove");
    if (strcmp(verb, "list") == 0 && o->npos == 1) {
        json_t *arr = o->json ? json_array() : NULL;
        return finish_list(arr, s->ops->account_list(s->impl, print_account, arr), "accounts list");
    }
    fputs(accounts_usage, stderr);
    return ADMIN_USAGE;
}

/* --- channels and runners: rows that are only an id --- */

static int print_id(const char *id, void *arg)
{
    if (arg)
        json_array_append_new(arg, json_pack("{s:s}", "id", id));
    else
        printf("%s\n", id);
    return 0;
}

static int plain_main(struct store *s, const char *group, const char *verb,
                      const struct admin_opts *o)
{
    int is_runner = strcmp(group, "runners") == 0;
    char what[64];

    snprintf(what, sizeof(what), "%s %s", group, verb);
    if (strcmp(verb, "add") == 0 && o->npos == 2)
        return admin_report(is_runner ? s->ops->runner_put(s->impl, o->pos[1], NULL)
                                      : s->ops->channel_put(s->impl, o->pos[1], NULL),
                            what);
    if (strcmp(verb, "remove") == 0 && o->npos == 2)
        return admin_report(s->ops->remove(s->impl,
                                           is_runner ? STORE_ENTITY_RUNNER : STORE_ENTITY_CHANNEL,
                                           o->pos[1]),
                            what);
    if (strcmp(verb, "list") == 0 && o->npos == 1) {
        json_t *arr = o->json ? json_array() : NULL;
        return finish_list(arr,
                           is_runner ? s->ops->runner_list(s->impl, print_id, arr)
                                     : s->ops->channel_list(s->impl, print_id, arr),
                           what);
    }
    fputs(admin_rows_usage(group), stderr);
    return ADMIN_USAGE;
}

/* --- members --- */

static int print_member(const char *account_id, const char *channel_id, void *arg)
{
    if (arg)
        json_array_append_new(
            arg, json_pack("{s:s, s:s}", "account", account_id, "channel", channel_id));
    else
        printf("%s\t%s\n", channel_id, account_id);
    return 0;
}

static int members_main(struct store *s, const char *verb, const struct admin_opts *o)
{
    int rv;

    if (strcmp(verb, "add") == 0 && o->npos == 3) {
        rv = need(s, STORE_ENTITY_ACCOUNT, "account", o->pos[1]);
        if (rv == ADMIN_OK)
            rv = need(s, STORE_ENTITY_CHANNEL, "channel", o->pos[2]);
        if (rv != ADMIN_OK)
            return rv;
        return admin_report(s->ops->member_add(s->impl, o->pos[1], o->pos[2], NULL), "members add");
    }
    if (strcmp(verb, "remove") == 0 && o->npos == 3)
        return admin_report(s->ops->member_remove(s->impl, o->pos[1], o->pos[2], NULL),
                            "members remove");
    if (strcmp(verb, "list") == 0 && o->npos == 1) {
        json_t *arr = o->json ? json_array() : NULL;
        return finish_list(
            arr, s->ops->member_list(s->impl, o->channel ? o->channel : "", print_member, arr),
            "members list");
    }
    fputs(members_usage, stderr);
    return ADMIN_USAGE;
}

/* --- containers --- */

static int print_container(const struct store_container *c, void *arg)
{
    if (arg)
        json_array_append_new(arg, json_pack("{s:s, s:s, s:s}", "name", c->name, "agent_account",
                                             c->agent_account_id, "runner", c->runner_id));
    else
        printf("%s\t%s\t%s\n", c->name, c->agent_account_id, c->runner_id);
    return 0;
}

static int containers_add(struct store *s, const struct admin_opts *o)
{
    struct store_container c;
    struct store_account a;
    int rc, rv;

    if (o->npos != 2 || !o->agent || !o->runner || !store_id_valid(o->pos[1])) {
        fputs(containers_usage, stderr);
        return ADMIN_USAGE;
    }
    rc = s->ops->account_get(s->impl, o->agent, &a);
    if (rc == STORE_NOT_FOUND || (rc == STORE_OK && a.kind != STORE_ACCOUNT_AGENT)) {
        fprintf(stderr, "agenthub admin: %s \"%s\"\n",
                rc == STORE_OK ? "not an agent account:" : "no account", o->agent);
        return ADMIN_USAGE;
    }
    if (rc != STORE_OK)
        return admin_report(rc, "containers add");
    rv = need(s, STORE_ENTITY_RUNNER, "runner", o->runner);
    if (rv != ADMIN_OK)
        return rv;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "%s", o->pos[1]);
    snprintf(c.agent_account_id, sizeof(c.agent_account_id), "%s", o->agent);
    snprintf(c.runner_id, sizeof(c.runner_id), "%s", o->runner);
    return admin_report(s->ops->container_put(s->impl, &c, NULL), "containers add");
}

static int containers_main(struct store *s, const char *verb, const struct admin_opts *o)
{
    if (strcmp(verb, "add") == 0)
        return containers_add(s, o);
    if (strcmp(verb, "remove") == 0 && o->npos == 2)
        return admin_report(s->ops->remove(s->impl, STORE_ENTITY_CONTAINER, o->pos[1]),
                            "containers remove");
    if (strcmp(verb, "list") == 0 && o->npos == 1) {
        json_t *arr = o->json ? json_array() : NULL;
        return finish_list(
            arr, s->ops->container_list(s->impl, o->runner ? o->runner : "", print_container, arr),
            "containers list");
    }
    fputs(containers_usage, stderr);
    return ADMIN_USAGE;
}

/* --- sessions --- */

static int print_session(const struct store_session *x, void *arg)
{
    if (arg)
        json_array_append_new(
            arg, json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s?, s:s, s:s?, s:I, s:b, s:I}", "id",
                           x->session_id, "container", x->container_name, "agent_account",
                           x->agent_account_id, "runner", x->runner_id, "owner",
                           x->owner_account_id[0] ? x->owner_account_id : NULL, "home_channel",
                           x->home_channel_id[0] ? x->home_channel_id : NULL, "provider",
                           x->provider, "native_id", x->native_id[0] ? x->native_id : NULL,
                           "resource_id", (json_int_t)x->resource_id, "closed", x->closed,
                           "created_at_ms", (json_int_t)x->created_at_ms));
    else
        printf("%s\t%s\t%s\t%s\t%s\n", x->session_id, x->container_name,
               x->owner_account_id[0] ? x->owner_account_id : "-", x->runner_id,
               x->closed ? "closed" : "open");
    return 0;
}

static int sessions_add(struct store *s, const struct admin_opts *o)
{
    struct store_session_spec spec;
    char id[STORE_ID_MAX];
    int rv;

    if (o->npos > 2 || !o->container || (o->npos == 2 && !store_id_valid(o->pos[1])) ||
        (o->native_id && !store_native_id_valid(o->native_id)) ||
        (o->provider && !store_id_valid(o->provider))) {
        fputs(sessions_usage, stderr);
        return ADMIN_USAGE;
    }
    rv = need(s, STORE_ENTITY_CONTAINER, "container", o->container);
    if (rv == ADMIN_OK && o->owner)
        rv = need(s, STORE_ENTITY_ACCOUNT, "account", o->owner);
    if (rv != ADMIN_OK)
        return rv;
    memset(&spec, 0, sizeof(spec));
    snprintf(spec.session_id, sizeof(spec.session_id), "%s", o->npos == 2 ? o->pos[1] : "");
    snprintf(spec.container_name, sizeof(spec.container_name), "%s", o->container);
    snprintf(spec.owner_account_id, sizeof(spec.owner_account_id), "%s", o->owner ? o->owner : "");
    snprintf(spec.provider, sizeof(spec.provider), "%s", o->provider ? o->provider : "");
    snprintf(spec.native_id, sizeof(spec.native_id), "%s", o->native_id ? o->native_id : "");
    rv = admin_report(s->ops->session_create(s->impl, &spec, id), "sessions add");
    if (rv == ADMIN_OK && o->npos == 1)
        printf("%s\n", id);
    return rv;
}

static int sessions_main(struct store *s, const char *verb, const struct admin_opts *o)
{
    struct store_session_filter f;

    if (strcmp(verb, "add") == 0)
        return sessions_add(s, o);
    if (strcmp(verb, "close") == 0 && o->npos == 2)
        return admin_report(s->ops->session_close(s->impl, o->pos[1]), "sessions close");
    if (strcmp(verb, "remove") == 0 && o->npos == 2)
        return admin_report(s->ops->remove(s->impl, STORE_ENTITY_SESSION, o->pos[1]),
                            "sessions remove");
    if (strcmp(verb, "list") == 0 && o->npos == 1) {
        json_t *arr = o->json ? json_array() : NULL;
        memset(&f, 0, sizeof(f));
        snprintf(f.runner_id, sizeof(f.runner_id), "%s", o->runner ? o->runner : "");
        snprintf(f.container_name, sizeof(f.container_name), "%s",
                 o->container ? o->container : "");
        f.open_only = o->open_only;
        return finish_list(arr, s->ops->session_list(s->impl, &f, print_session, arr),
                           "sessions list");
    }
    fputs(sessions_usage, stderr);
    return ADMIN_USAGE;
}

int admin_rows_main(struct store *s, const char *group, const struct admin_opts *o)
{
    const char *verb = o->npos > 0 ? o->pos[0] : "";

    if (strcmp(group, "accounts") == 0)
        return accounts_main(s, verb, o);
    if (strcmp(group, "members") == 0)
        return members_main(s, verb, o);
    if (strcmp(group, "containers") == 0)
        return containers_main(s, verb, o);
    if (strcmp(group, "sessions") == 0)
        return sessions_main(s, verb, o);
    return plain_main(s, group, verb, o);
}
