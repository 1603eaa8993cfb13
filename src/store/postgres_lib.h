/* postgres_lib: libpq, loaded when a PostgreSQL store is first opened.
 *
 * libpq brings some twenty shared libraries with it (GSSAPI, LDAP, a TLS
 * stack).  The programs link none of them: the hook shim, which runs for
 * every agent event, and the Runner never use PostgreSQL, and a server on
 * SQLite should not carry them.  So libpq.so.5 is dlopen()ed on first use
 * and the backend calls it through the table below; the macros at the end
 * make the backend's code read as ordinary libpq calls.  Nothing outside
 * src/store/postgres*.c includes this. */
#ifndef AGENTHUB_POSTGRES_LIB_H
#define AGENTHUB_POSTGRES_LIB_H

#include <libpq-fe.h>
#include <stddef.h>

#define PG_LIB_FUNCS(X)                                                                            \
    X(PQbackendPID)                                                                                \
    X(PQclear)                                                                                     \
    X(PQcmdStatus)                                                                                 \
    X(PQcmdTuples)                                                                                 \
    X(PQconnectPoll)                                                                               \
    X(PQconnectStartParams)                                                                        \
    X(PQconsumeInput)                                                                              \
    X(PQerrorMessage)                                                                              \
    X(PQexec)                                                                                      \
    X(PQfinish)                                                                                    \
    X(PQflush)                                                                                     \
    X(PQfreemem)                                                                                   \
    X(PQgetResult)                                                                                 \
    X(PQgetisnull)                                                                                 \
    X(PQgetvalue)                                                                                  \
    X(PQisBusy)                                                                                    \
    X(PQnotifies)                                                                                  \
    X(PQntuples)                                                                                   \
    X(PQresultErrorField)                                                                          \
    X(PQresultStatus)                                                                              \
    X(PQsendPrepare)                                                                               \
    X(PQsendQuery)                                                                                 \
    X(PQsendQueryParams)                                                                           \
    X(PQsendQueryPrepared)                                                                         \
    X(PQsetNoticeProcessor)                                                                        \
    X(PQsetnonblocking)                                                                            \
    X(PQsocket)                                                                                    \
    X(PQstatus)

struct pg_lib {
/* NOLINTNEXTLINE(bugprone-macro-parentheses): NAME is a member name here */
#define PG_LIB_MEMBER(name) __typeof__(name) *name;
    PG_LIB_FUNCS(PG_LIB_MEMBER)
#undef PG_LIB_MEMBER
};

extern struct pg_lib pg_lib;

/* Loads libpq.so.5 and every function above, once per process.  Returns 0,
 * or -1 with the reason in ERR (libpq is not installed, or too old). */
int pg_lib_load(char *err, size_t errlen);

#ifndef PG_LIB_IMPLEMENTATION
#define PQbackendPID         (pg_lib.PQbackendPID)
#define PQclear              (pg_lib.PQclear)
#define PQcmdStatus          (pg_lib.PQcmdStatus)
#define PQcmdTuples          (pg_lib.PQcmdTuples)
#define PQconnectPoll        (pg_lib.PQconnectPoll)
#define PQconnectStartParams (pg_lib.PQconnectStartParams)
#define PQconsumeInput       (pg_lib.PQconsumeInput)
#define PQerrorMessage       (pg_lib.PQerrorMessage)
#define PQexec               (pg_lib.PQexec)
#define PQfinish             (pg_lib.PQfinish)
#define PQflush              (pg_lib.PQflush)
#define PQfreemem            (pg_lib.PQfreemem)
#define PQgetResult          (pg_lib.PQgetResult)
#define PQgetisnull          (pg_lib.PQgetisnull)
#define PQgetvalue           (pg_lib.PQgetvalue)
#define PQisBusy             (pg_lib.PQisBusy)
#define PQnotifies           (pg_lib.PQnotifies)
#define PQntuples            (pg_lib.PQntuples)
#define PQresultErrorField   (pg_lib.PQresultErrorField)
#define PQresultStatus       (pg_lib.PQresultStatus)
#define PQsendPrepare        (pg_lib.PQsendPrepare)
#define PQsendQuery          (pg_lib.PQsendQuery)
#define PQsendQueryParams    (pg_lib.PQsendQueryParams)
#define PQsendQueryPrepared  (pg_lib.PQsendQueryPrepared)
#define PQsetNoticeProcessor (pg_lib.PQsetNoticeProcessor)
#define PQsetnonblocking     (pg_lib.PQsetnonblocking)
#define PQsocket             (pg_lib.PQsocket)
#define PQstatus             (pg_lib.PQstatus)
#endif

#endif
