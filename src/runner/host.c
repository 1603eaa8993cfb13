/* host: the sessions this Runner hosts and their agent processes.
 *
 * Each session runs --agent under /bin/sh -c in its own process group, with
 * AGENTHUB_SESSION_ID in its environment, stdin and stdout on pipes and
 * stderr inherited.  Its stdout frames are relayed (agent_frames.h); inbound
 * deliver items go through the batch window (runner/batch.h) and the fired
 * burst is written on its stdin.  Process evidence: PROCESS READY with a live
 * child when it starts, PROCESS STOPPED without one when it exits; the exit
 * is also published as the session's terminal state frame (STOPPED, or
 * ERRORED for a failing exit), which closes an open batch window. */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "runner/batch.h"
#include "runner/agent_frames.h"
#include "runner/runner.h"

#define HOST_KILL_GRACE_MS 3000
#define PATH_EVIDENCE      "/compass.v1.RunnerService/ReportEvidence"

struct host_session {
    struct host_session *next;
    struct runner *r;
    char id[256];
    pid_t pid;
    int alive;   /* started and not yet finished */
    int reaped;  /* waitpid collected it */
    int out_eof; /* its stdout is drained */
    int wstatus;
    int stop_requested;
    struct bufferevent *in, *out;
    struct batch batch;
    int batch_live;
    struct event *batch_timer;
    struct event *kill_timer;
};

static struct event *sigchld_event;
static void (*stop_all_done)(struct runner *r);

/* --- Helpers ------------------------------------------------------------------ */

static struct host_session *session_find(struct runner *r, const char *id)
{
    for (struct host_session *s = r->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static void report_evidence(struct host_session *s, int state, int live_child)
{
    Compass__V1__ReportEvidenceRequest request = COMPASS__V1__REPORT_EVIDENCE_REQUEST__INIT;

    request.session_id = s->id;
    request.rank = COMPASS__V1__EVIDENCE_RANK__EVIDENCE_RANK_PROCESS;
    request.state = (Compass__V1__AgentSessionState)state;
    request.live_child = live_child ? 1 : 0;
    conn_unary_async(s->r->conn, PATH_EVIDENCE, &request.base);
}

static void relay_frame(struct host_session *s, uint8_t *frame, size_t len)
{
    if (relay_enqueue(s->r, s->id, frame, len) != 0)
        log_error("session %s: out of memory queueing a frame", s->id);
}

/* Writes TEXT and a newline on the agent's stdin (dropped once it closed). */
static void agent_write_line(struct host_session *s, const char *text)
{
    if (!s->in)
        return;
    bufferevent_write(s->in, text, strlen(text));
    bufferevent_write(s->in, "\n", 1);
}

/* --- Batch window --------------------------------------------------------------- */

static void batch_timer_update(struct host_session *s)
{
    int64_t deadline = s->batch_live ? batch_next_deadline(&s->batch) : -1;
    int64_t wait;
    struct timeval tv;

    if (deadline < 0) {
        evtimer_del(s->batch_timer);
        return;
    }
    wait = deadline - clock_unix_ms();
    if (wait < 0)
        wait = 0;
    tv.tv_sec = wait / 1000;
    tv.tv_usec = (wait % 1000) * 1000;
    evtimer_add(s->batch_timer, &tv);
}

static void on_batch_timer(evutil_socket_t fd, short what, void *arg)
{
    struct host_session *s = arg;

    if (s->batch_live)
        batch_tick(&s->batch, clock_unix_ms());
    batch_timer_update(s);
}

static void on_batch_pending(void *ctx, uint32_t count, uint64_t fires_at_unix_ms)
{
    struct host_session *s = ctx;
    uint8_t *frame;
    size_t len;

    log_debug("session %s: batch pending count %u", s->id, count);
    if (agent_frames_batch_pending(count, fires_at_unix_ms, clock_unix_ms(), &frame, &len) == 0)
        relay_frame(s, frame, len);
}

static void on_batch_fire(void *ctx, const struct batch_item *items, uint32_t count)
{
    struct host_session *s = ctx;
    json_t *batch = json_array();
    json_t *line = json_object();
    char *text;

    for (const struct batch_item *it = items; it; it = it->next)
        json_array_append_new(batch, json_stringn((const char *)it->data, it->len));
    json_object_set_new(line, "batch", batch);
    text = json_dumps(line, JSON_COMPACT);
    json_decref(line);
    if (text) {
        agent_write_line(s, text);
        free(text);
    }
    log_info("session %s: batch of %u delivered to the agent", s->id, count);
}

static const struct batch_ops host_batch_ops = {on_batch_pending, on_batch_fire, NULL};

/* Feeds the agent's own STATE to the batch window: idle states let the window
 * arm, working states hold items for after the turn. */
static void apply_agent_state(struct host_session *s, int state)
{
    if (!s->batch_live)
        return;
    switch (state) {
    case COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_READY:
    case COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_IDLE:
    case COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_DONE:
        batch_set_running(&s->batch, 0);
        break;
    case COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STARTING:
    case COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_WORKING:
    case COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_BLOCKED:
        batch_set_running(&s->batch, 1);
        break;
    default:
        break;
    }
    batch_timer_update(s);
}

/* --- Agent output ----------------------------------------------------------------- */

static void handle_line(struct host_session *s, struct agent_line *line)
{
    struct runner *r = s->r;
    json_t *answer;
    char *text;
    uint8_t *frame;
    size_t len;

    switch (line->kind) {
    case AGENT_LINE_FRAME:
        relay_frame(s, line->frame, line->frame_len);
        line->frame = NULL;
        if (line->state)
            apply_agent_state(s, line->state);
        break;
    case AGENT_LINE_TRANSCRIPT:
        uploader_rewrite_entry(&r->uploader, s->id, line->entry);
        text = json_dumps(line->entry, JSON_COMPACT | JSON_ENCODE_ANY);
        if (text &&
            agent_frames_transcript(text, line->checkpoint, line->entry_seq, &frame, &len) == 0)
            relay_frame(s, frame, len);
        free(text);
        break;
    case AGENT_LINE_RESUME:
        uploader_resume_entry(&r->uploader, s->id, line->entry);
        answer = json_pack("{s:{s:s,s:O}}", "resume_entry", "id", line->id, "entry", line->entry);
        text = answer ? json_dumps(answer, JSON_COMPACT) : NULL;
        if (text)
            agent_write_line(s, text);
        free(text);
        json_decref(answer);
        break;
    }
}

static void read_json_lines(struct host_session *s, struct evbuffer *in)
{
    struct agent_line line;
    char err[256];
    size_t n;
    char *text;

    while ((text = evbuffer_readln(in, &n, EVBUFFER_EOL_LF)) != NULL) {
        if (n > 0 && text[n - 1] == '\r')
            text[--n] = '\0';
        if (n > 0) {
            if (agent_line_parse_json(text, n, clock_unix_ms(), &line, err, sizeof(err)) == 0) {
                handle_line(s, &line);
                agent_line_clear(&line);
            } else {
                log_warn("session %s: agent line skipped (%s): %.120s", s->id, err, text);
            }
        }
        free(text);
    }
    if (evbuffer_get_length(in) > AGENT_FRAMES_MAX) {
        log_warn("session %s: agent line over %d bytes; dropped", s->id, AGENT_FRAMES_MAX);
        evbuffer_drain(in, evbuffer_get_length(in));
    }
}

static void read_pb_frames(struct host_session *s, struct evbuffer *in)
{
    struct agent_line line;
    const uint8_t *frame;
    size_t frame_len, consumed, have;
    char err[256];
    int rv;

    while ((have = evbuffer_get_length(in)) > 0) {
        /* Frames are bounded (AGENT_FRAMES_MAX): keep the input contiguous. */
        const uint8_t *data = evbuffer_pullup(in, -1);
        rv = agent_frames_pb_next(data, have, &consumed, &frame, &frame_len);
        if (rv == 0)
            return;
        if (rv < 0) {
            log_warn("session %s: malformed varint-delimited stream; output discarded", s->id);
            evbuffer_drain(in, have);
            return;
        }
        if (agent_line_from_pb(frame, frame_len, &line, err, sizeof(err)) == 0) {
            handle_line(s, &line);
            agent_line_clear(&line);
        } else {
            log_warn("session %s: agent frame skipped (%s)", s->id, err);
        }
        evbuffer_drain(in, consumed);
    }
}

static void session_maybe_finish(struct host_session *s);

static void on_out_read(struct bufferevent *bev, void *arg)
{
    struct host_session *s = arg;

    if (s->r->cfg.agent_pb)
        read_pb_frames(s, bufferevent_get_input(bev));
    else
        read_json_lines(s, bufferevent_get_input(bev));
}

static void on_out_event(struct bufferevent *bev, short events, void *arg)
{
    struct host_session *s = arg;

    if (!(events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
        return;
    on_out_read(bev, s);
    bufferevent_free(s->out);
    s->out = NULL;
    s->out_eof = 1;
    session_maybe_finish(s);
}

static void on_in_event(struct bufferevent *bev, short events, void *arg)
{
    struct host_session *s = arg;

    if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        bufferevent_free(s->in);
        s->in = NULL;
    }
}

/* --- Process lifecycle ------------------------------------------------------------ */

static void on_kill_timer(evutil_socket_t fd, short what, void *arg)
{
    struct host_session *s = arg;

    if (s->alive && !s->reaped) {
        log_warn("session %s: agent ignored SIGTERM; killing it", s->id);
        kill(-s->pid, SIGKILL);
    }
}

static void session_terminate(struct host_session *s)
{
    struct timeval tv = {HOST_KILL_GRACE_MS / 1000, (HOST_KILL_GRACE_MS % 1000) * 1000};

    if (!s->alive || s->reaped)
        return;
    s->stop_requested = 1;
    if (s->in) {
        bufferevent_free(s->in);
        s->in = NULL;
    }
    kill(-s->pid, SIGTERM);
    evtimer_add(s->kill_timer, &tv);
}

static int all_stopped(struct runner *r)
{
    for (struct host_session *s = r->sessions; s; s = s->next)
        if (s->alive)
            return 0;
    return 1;
}

/* Once the agent has exited and its stdout is drained: closes the window,
 * publishes the terminal state and the process evidence. */
static void session_maybe_finish(struct host_session *s)
{
    struct runner *r = s->r;
    int failed, state;
    uint8_t *frame;
    size_t len;

    if (!s->alive || !s->reaped || !s->out_eof)
        return;
    s->alive = 0;
    evtimer_del(s->kill_timer);
    if (s->in) {
        bufferevent_free(s->in);
        s->in = NULL;
    }
    if (s->batch_live) {
        batch_end(&s->batch); /* the terminal status closes it: no count 0 */
        batch_free(&s->batch);
        s->batch_live = 0;
        evtimer_del(s->batch_timer);
    }
    failed = !s->stop_requested && !(WIFEXITED(s->wstatus) && WEXITSTATUS(s->wstatus) == 0);
    if (WIFEXITED(s->wstatus))
        log_info("session %s: agent exited with status %d", s->id, WEXITSTATUS(s->wstatus));
    else if (WIFSIGNALED(s->wstatus))
        log_info("session %s: agent killed by signal %d", s->id, WTERMSIG(s->wstatus));
    state = failed ? COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_ERRORED
                   : COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED;
    if (agent_frames_state(state, &frame, &len) == 0)
        relay_frame(s, frame, len);
    report_evidence(s, COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED, 0);
    conn_report_live(r->conn);
    if (r->stopping && stop_all_done && all_stopped(r)) {
        void (*done)(struct runner *) = stop_all_done;
        stop_all_done = NULL;
        done(r);
    }
}

static void on_sigchld(evutil_socket_t fd, short what, void *arg)
{
    struct runner *r = arg;
    int wstatus;
    pid_t pid;

    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
        for (struct host_session *s = r->sessions; s; s = s->next) {
            if (s->alive && !s->reaped && s->pid == pid) {
                s->reaped = 1;
                s->wstatus = wstatus;
                /* A grandchild may hold stdout open: once the agent itself is
                 * gone, stop waiting for EOF. */
                kill(-s->pid, SIGTERM);
                if (s->out) {
                    struct evbuffer *in = bufferevent_get_input(s->out);
                    for (int i = 0; i < 64; i++)
                        if (evbuffer_read(in, bufferevent_getfd(s->out), 65536) <= 0)
                            break;
                    on_out_read(s->out, s);
                    bufferevent_free(s->out);
                    s->out = NULL;
                    s->out_eof = 1;
                }
                session_maybe_finish(s);
                break;
            }
        }
    }
}

/* Starts S's agent.  Returns 0, or -1 with a reason in ERR. */
static int session_spawn(struct host_session *s, char *err, size_t err_size)
{
    struct runner *r = s->r;
    int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
    pid_t pid;

    if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
        snprintf(err, err_size, "pipe: %s", strerror(errno));
        goto fail;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(err, err_size, "fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        if (dup2(in_pipe[0], 0) < 0 || dup2(out_pipe[1], 1) < 0)
            _exit(127);
        /* libevent's sockets are not close-on-exec: the agent must not
         * hold the Runner's connections (or other agents' pipes) open. */
        if (close_range(3, ~0U, 0) != 0)
            for (long fd = sysconf(_SC_OPEN_MAX) - 1; fd > 2; fd--)
                close((int)fd);
        setenv("AGENTHUB_SESSION_ID", s->id, 1);
        execl("/bin/sh", "sh", "-c", r->cfg.agent_cmd, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    close(in_pipe[0]);
    close(out_pipe[1]);
    evutil_make_socket_nonblocking(in_pipe[1]);
    evutil_make_socket_nonblocking(out_pipe[0]);
    s->in = bufferevent_socket_new(r->base, in_pipe[1], BEV_OPT_CLOSE_ON_FREE);
    s->out = bufferevent_socket_new(r->base, out_pipe[0], BEV_OPT_CLOSE_ON_FREE);
    if (!s->in || !s->out) {
        log_error("session %s: out of memory wiring the agent", s->id);
        abort();
    }
    bufferevent_setcb(s->out, on_out_read, NULL, on_out_event, s);
    bufferevent_enable(s->out, EV_READ);
    bufferevent_setcb(s->in, NULL, NULL, on_in_event, s);
    bufferevent_enable(s->in, EV_WRITE);
    s->pid = pid;
    s->alive = 1;
    s->reaped = s->out_eof = s->stop_requested = 0;
    batch_init(&s->batch, r->cfg.batch_window_ms, &host_batch_ops, s);
    s->batch_live = 1;
    log_info("session %s: agent started (pid %d)", s->id, (int)pid);
    report_evidence(s, COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_READY, 1);
    conn_report_live(r->conn);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        if (in_pipe[i] >= 0)
            close(in_pipe[i]);
        if (out_pipe[i] >= 0)
            close(out_pipe[i]);
    }
    return -1;
}

/* The session ID, created when new.  Returns NULL when memory runs out. */
static struct host_session *session_get(struct runner *r, const char *id)
{
    struct host_session *s = session_find(r, id);

    if (s)
        return s;
    s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->r = r;
    snprintf(s->id, sizeof(s->id), "%s", id);
    s->batch_timer = evtimer_new(r->base, on_batch_timer, s);
    s->kill_timer = evtimer_new(r->base, on_kill_timer, s);
    if (!s->batch_timer || !s->kill_timer) {
        if (s->batch_timer)
            event_free(s->batch_timer);
        if (s->kill_timer)
            event_free(s->kill_timer);
        free(s);
        return NULL;
    }
    s->next = r->sessions;
    r->sessions = s;
    return s;
}

/* --- The module's API --------------------------------------------------------------- */

int host_start(struct runner *r)
{
    char err[256];

    sigchld_event = evsignal_new(r->base, SIGCHLD, on_sigchld, r);
    if (!sigchld_event || evsignal_add(sigchld_event, NULL) != 0)
        return -1;
    for (size_t i = 0; i < r->cfg.n_sessions; i++) {
        struct host_session *s = session_get(r, r->cfg.sessions[i]);
        if (!s)
            return -1;
        if (!s->alive && session_spawn(s, err, sizeof(err)) != 0) {
            log_error("session %s: cannot start the agent: %s", s->id, err);
            return -1;
        }
    }
    return 0;
}

void host_stop_all(struct runner *r, void (*done)(struct runner *r))
{
    if (all_stopped(r)) {
        done(r);
        return;
    }
    stop_all_done = done;
    for (struct host_session *s = r->sessions; s; s = s->next)
        session_terminate(s);
}

void host_free(struct runner *r)
{
    while (r->sessions) {
        struct host_session *s = r->sessions;
        r->sessions = s->next;
        if (s->alive && !s->reaped)
            kill(-s->pid, SIGKILL);
        if (s->in)
            bufferevent_free(s->in);
        if (s->out)
            bufferevent_free(s->out);
        if (s->batch_live)
            batch_free(&s->batch);
        event_free(s->batch_timer);
        event_free(s->kill_timer);
        free(s);
    }
    if (sigchld_event) {
        event_free(sigchld_event);
        sigchld_event = NULL;
    }
}

/* Fills ANSWER as a refusal with CODE and a printf-style message. */
static void __attribute__((format(printf, 3, 4)))
answer_refuse(struct host_answer *answer, Compass__V1__RunnerErrorCode code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(answer->message, sizeof(answer->message), fmt, ap);
    va_end(ap);
    answer->error.code = code;
    answer->error.message = answer->message;
    answer->msg.result_case = COMPASS__V1__SESSIONS_REQUEST__RESULT_ERROR;
    answer->msg.error = &answer->error;
}

/* The status answer: SESSION_ID's, or every live session's when it is "".
 * Only the server derives states; a live agent is reported UNSPECIFIED. */
static void answer_status(struct runner *r, const char *session_id, struct host_answer *answer)
{
    size_t n = 0, max = 0;

    for (struct host_session *s = r->sessions; s; s = s->next)
        max++;
    if (max) {
        answer->statuses = calloc(max, sizeof(*answer->statuses));
        answer->status_ptrs = calloc(max, sizeof(*answer->status_ptrs));
        if (!answer->statuses || !answer->status_ptrs) {
            answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_INTERNAL,
                          "out of memory");
            return;
        }
    }
    for (struct host_session *s = r->sessions; s; s = s->next) {
        if (session_id[0] ? strcmp(s->id, session_id) != 0 : !s->alive)
            continue;
        compass__v1__agent_session_status__init(&answer->statuses[n]);
        answer->statuses[n].session_id = s->id;
        if (!s->alive)
            answer->statuses[n].state =
                COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED;
        answer->status_ptrs[n] = &answer->statuses[n];
        n++;
    }
    if (session_id[0] && n == 0) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_NOT_FOUND,
                      "session %.128s is not hosted by this runner", session_id);
        return;
    }
    answer->status.n_statuses = n;
    answer->status.statuses = answer->status_ptrs;
    answer->msg.result_case = COMPASS__V1__SESSIONS_REQUEST__RESULT_STATUS;
    answer->msg.status = &answer->status;
}

static void command_start(struct runner *r, const Compass__V1__SessionsResponse *command,
                          struct host_answer *answer)
{
    struct host_session *s;
    char err[200];

    if (command->session_id[0] == '\0') {
        /* This Runner hosts the sessions the server names; it picks none. */
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_INTERNAL,
                      "a start must name its session_id");
        return;
    }
    if (r->stopping) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_INTERNAL,
                      "the runner is stopping");
        return;
    }
    s = session_get(r, command->session_id);
    if (!s) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_INTERNAL,
                      "out of memory");
        return;
    }
    if (s->alive && s->stop_requested) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_ALREADY_RUNNING,
                      "session %.128s is still stopping", s->id);
        return;
    }
    /* A start of a running session is a retry: it succeeds again. */
    if (!s->alive && session_spawn(s, err, sizeof(err)) != 0) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_INTERNAL, "%s",
                      err);
        return;
    }
    answer->start.session_id = s->id;
    answer->msg.result_case = COMPASS__V1__SESSIONS_REQUEST__RESULT_START;
    answer->msg.start = &answer->start;
}

/* The session a batch-window command is for, when its agent is live;
 * otherwise NULL with ANSWER a NOT_FOUND refusal. */
static struct host_session *live_session(struct runner *r, const char *session_id,
                                         struct host_answer *answer)
{
    struct host_session *s = session_find(r, session_id);

    if (s && s->alive && s->batch_live)
        return s;
    answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_NOT_FOUND,
                  "session %.128s is not running on this runner", session_id);
    return NULL;
}

static void command_deliver(struct runner *r, const Compass__V1__DispatchControl *dispatch,
                            struct host_answer *answer)
{
    const Compass__V1__AgentControl *op = dispatch->op;
    struct host_session *s;
    const char *input;
    int rv;

    if (!op || op->control_case != COMPASS__V1__AGENT_CONTROL__CONTROL_PROMPT) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_INTERNAL,
                      "this runner relays prompt controls only");
        return;
    }
    if (!(s = live_session(r, dispatch->session_id, answer)))
        return;
    input = op->prompt->input;
    rv = batch_push(&s->batch, input, strlen(input));
    if (rv == -1) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_RESOURCE_EXHAUSTED,
                      "cannot queue the item: out of memory");
        return;
    }
    if (rv != 0) {
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_NOT_FOUND,
                      "session %.128s has ended", s->id);
        return;
    }
    batch_timer_update(s);
}

void host_command(struct runner *r, const Compass__V1__SessionsResponse *command,
                  struct host_answer *answer)
{
    struct host_session *s;

    memset(answer, 0, sizeof(*answer));
    compass__v1__sessions_request__init(&answer->msg);
    compass__v1__runner_error__init(&answer->error);
    compass__v1__start_agent_session_response__init(&answer->start);
    compass__v1__stop_agent_session_response__init(&answer->stop);
    compass__v1__get_agent_status_response__init(&answer->status);
    answer->msg.request_id = command->request_id;
    switch (command->command_case) {
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_START:
        command_start(r, command, answer);
        return;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_STOP:
        /* Stopping a session this Runner does not run is already done. */
        if ((s = session_find(r, command->stop->session_id)) != NULL)
            session_terminate(s);
        answer->msg.result_case = COMPASS__V1__SESSIONS_REQUEST__RESULT_STOP;
        answer->msg.stop = &answer->stop;
        return;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_STATUS:
        answer_status(r, command->status->session_id, answer);
        return;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_DELIVER_CONTROL:
        command_deliver(r, command->deliver_control, answer);
        return;
    case COMPASS__V1__SESSIONS_RESPONSE__COMMAND_START_NOW:
        if (!(s = live_session(r, command->start_now->session_id, answer)))
            return;
        /* Fires an open window now (a no-op when none is open); the answer
         * goes out after the burst was written. */
        batch_start_now(&s->batch);
        batch_timer_update(s);
        return;
    default:
        answer_refuse(answer, COMPASS__V1__RUNNER_ERROR_CODE__RUNNER_ERROR_CODE_INTERNAL,
                      "unrecognized session command");
        return;
    }
}

void host_answer_free(struct host_answer *answer)
{
    free(answer->statuses);
    free(answer->status_ptrs);
    answer->statuses = NULL;
    answer->status_ptrs = NULL;
}

size_t host_live_sessions(struct runner *r, char **ids, size_t max)
{
    size_t n = 0;

    for (struct host_session *s = r->sessions; s && n < max; s = s->next)
        if (s->alive)
            ids[n++] = s->id;
    return n;
}

void host_on_connected(struct runner *r)
{
    for (struct host_session *s = r->sessions; s; s = s->next) {
        if (s->alive)
            report_evidence(s, COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_READY, 1);
        else
            report_evidence(s, COMPASS__V1__AGENT_SESSION_STATE__AGENT_SESSION_STATE_STOPPED, 0);
    }
}
