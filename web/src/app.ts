// The pane page: sign in with a token, list the sessions the caller may
// see (live from SubscribeEvents), open one session's pane (live from
// SubscribeAgentSession), fire its batch window, send it a message.
//
// The token lives in sessionStorage and travels only as an authorization
// header; the page reaches nothing but its own origin.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { Client } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { AgentSessionState } from "./gen/compass/v1/frames_pb";
import type { AgentSessionFrame } from "./gen/compass/v1/frames_pb";
import { CompassService } from "./gen/compass/v1/services_pb";
import type { SubscribeEventsResponse } from "./gen/compass/v1/services_pb";
import { PaneView, stateName } from "./pane";

const TOKEN_KEY = "agenthub-token";
/* Frames replayed when a pane opens, and frame elements the pane keeps. */
const TAIL = 1000;
const DOM_CAP = 2000;
/* since_seq no bus ever reaches: SubscribeEvents answers it at once with
 * resync_required, which carries the server's current instance epoch. */
const EPOCH_PROBE_SEQ = 0xffffffffffffffffn;
const ALL_RETAINED = 0xffffffff;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;

type Compass = Client<typeof CompassService>;

function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error("missing #" + id);
  return e;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}

function isEnded(state: number): boolean {
  return state === AgentSessionState.STOPPED || state === AgentSessionState.ERRORED;
}

class Page {
  private token = "";
  private client: Compass;
  private signedIn: AbortController | null = null;
  private paneCtl: AbortController | null = null;
  private pane = new PaneView($("pane"), DOM_CAP);
  private sessions = new Map<string, HTMLElement>();
  private eventsStatus = "reconnecting";
  private paneStatus = "";
  private openId = "";
  private batchCount = 0;
  private batchFiresAt = 0;
  private mayControl: boolean | null = null;

  constructor() {
    const transport = createGrpcWebTransport({ baseUrl: location.origin, useBinaryFormat: true });
    this.client = createClient(CompassService, transport);
    $("signin").addEventListener("submit", (e) => {
      e.preventDefault();
      const input = $("token") as HTMLInputElement;
      const token = input.value.trim();
      input.value = "";
      if (token) this.signIn(token);
    });
    $("logout").addEventListener("click", () => this.signOut(""));
    $("skip-batch").addEventListener("click", () => void this.skipBatch());
    $("send-form").addEventListener("submit", (e) => {
      e.preventDefault();
      void this.send();
    });
    window.addEventListener("hashchange", () => this.route());
    setInterval(() => this.renderBatch(), 500);
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) this.signIn(saved);
    else this.setStatus();
  }

  private headers(): Record<string, string> {
    return { authorization: "Bearer " + this.token };
  }

  /* #status: the open pane's, else the sessions stream's. */
  private setStatus(): void {
    let text = "signed out";
    if (this.signedIn) text = this.openId ? this.paneStatus || "reconnecting" : this.eventsStatus;
    $("status").textContent = text;
    $("status").dataset.status = text;
  }

  // --- Signing in and out --------------------------------------------------

  private signIn(token: string): void {
    this.signOut("");
    this.token = token;
    sessionStorage.setItem(TOKEN_KEY, token);
    const ctl = new AbortController();
    this.signedIn = ctl;
    $("signin-error").textContent = "";
    $("signin").hidden = true;
    $("main").hidden = false;
    $("logout").hidden = false;
    this.setStatus();
    this.client
      .whoAmI({}, { headers: this.headers(), signal: ctl.signal })
      .then((r) => ($("whoami").textContent = r.accountId))
      .catch((e) => this.failed(e));
    void this.eventsLoop(ctl.signal);
    this.route();
  }

  /* Forgets the token and stops every stream; WHY is shown at the form. */
  private signOut(why: string): void {
    this.closePane();
    if (this.signedIn) this.signedIn.abort();
    this.signedIn = null;
    this.token = "";
    sessionStorage.removeItem(TOKEN_KEY);
    this.sessions.clear();
    $("sessions").replaceChildren();
    $("whoami").textContent = "";
    $("signin").hidden = false;
    $("main").hidden = true;
    $("logout").hidden = true;
    $("signin-error").textContent = why;
    this.setStatus();
  }

  /* A call failed: a refused token signs out.  Returns the error. */
  private failed(e: unknown): ConnectError {
    const err = ConnectError.from(e);
    if (err.code === Code.Unauthenticated && this.signedIn) this.signOut("the token was refused: " + err.rawMessage);
    return err;
  }

  // --- The sessions list ---------------------------------------------------

  private setSession(id: string, state: number): void {
    let li = this.sessions.get(id);
    if (!li) {
      li = document.createElement("li");
      li.dataset.sessionId = id;
      const a = document.createElement("a");
      a.href = "#session=" + encodeURIComponent(id);
      a.textContent = id;
      const badge = document.createElement("span");
      badge.className = "badge";
      li.append(a, " ", badge);
      this.sessions.set(id, li);
      const list = $("sessions");
      const after = [...this.sessions.keys()].sort().find((k) => k > id);
      list.insertBefore(li, after ? this.sessions.get(after)! : null);
    }
    const name = stateName(state);
    li.dataset.state = name;
    const badge = li.lastChild as HTMLElement;
    badge.textContent = name;
    badge.className = "badge state-" + name;
    if (id === this.openId) this.showState(state);
  }

  private async snapshot(signal: AbortSignal): Promise<void> {
    try {
      const r = await this.client.getAgentStatus({ sessionId: "" }, { headers: this.headers(), signal });
      const seen = new Set(r.statuses.map((s) => s.sessionId));
      // Sessions the caller may no longer see leave the list.
      for (const [id, li] of this.sessions) {
        if (!seen.has(id)) {
          li.remove();
          this.sessions.delete(id);
        }
      }
      for (const s of r.statuses) this.setSession(s.sessionId, s.state);
    } catch (e) {
      this.failed(e);
    }
  }

  private applyEvent(r: SubscribeEventsResponse): void {
    if (r.payload.case === "agentSessionStatus") this.setSession(r.payload.value.sessionId, r.payload.value.state);
  }

  /* SubscribeEvents, resumed from the last event after a drop; a resync
   * (another server instance, or events gone) takes a fresh snapshot. */
  private async eventsLoop(signal: AbortSignal): Promise<void> {
    let since = 0n;
    let epoch = 0n;
    let backoff = BACKOFF_MIN_MS;
    while (!signal.aborted) {
      let resync = false;
      try {
        const stream = this.client.subscribeEvents(
          { sinceSeq: since, instanceEpoch: epoch },
          {
            headers: this.headers(),
            signal,
            timeoutMs: 0,
            onHeader: () => {
              this.eventsStatus = "live";
              this.setStatus();
              backoff = BACKOFF_MIN_MS;
              if (since === 0n) void this.snapshot(signal);
            },
          },
        );
        for await (const r of stream) {
          if (r.payload.case === "resyncRequired") {
            resync = true;
            since = 0n;
            epoch = r.instanceEpoch;
            continue;
          }
          since = r.seq;
          epoch = r.instanceEpoch;
          this.applyEvent(r);
        }
      } catch (e) {
        const err = this.failed(e);
        if (signal.aborted || err.code === Code.Unauthenticated) return;
      }
      if (resync) continue;
      this.eventsStatus = "reconnecting";
      this.setStatus();
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    }
  }

  /* The server's instance epoch, or null when it cannot be had now. */
  private async probeEpoch(signal: AbortSignal): Promise<bigint | null> {
    try {
      const stream = this.client.subscribeEvents(
        { sinceSeq: EPOCH_PROBE_SEQ, instanceEpoch: 0n },
        { headers: this.headers(), signal, timeoutMs: 10000 },
      );
      for await (const r of stream) return r.instanceEpoch;
    } catch (e) {
      this.failed(e);
    }
    return null;
  }

  // --- One session's pane --------------------------------------------------

  private route(): void {
    if (!this.signedIn) return;
    const m = /^#session=(.+)$/.exec(location.hash);
    const id = m ? decodeURIComponent(m[1]) : "";
    if (id === this.openId) return;
    this.closePane();
    if (id) this.openPane(id);
  }

  private closePane(): void {
    if (this.paneCtl) this.paneCtl.abort();
    this.paneCtl = null;
    this.openId = "";
    this.paneStatus = "";
    this.pane.reset();
    this.batchCount = 0;
    this.mayControl = null;
    $("pane-title").textContent = "No session open";
    $("state").textContent = "";
    $("send-form").hidden = true;
    $("send-result").textContent = "";
    for (const li of this.sessions.values()) li.classList.remove("open");
    this.renderBatch();
    this.setStatus();
  }

  private openPane(id: string): void {
    const ctl = new AbortController();
    this.paneCtl = ctl;
    this.openId = id;
    this.paneStatus = "reconnecting";
    $("pane-title").textContent = id;
    $("send-form").hidden = false;
    this.sessions.get(id)?.classList.add("open");
    this.setStatus();
    void this.loadControl(id, ctl.signal);
    void this.paneLoop(id, ctl.signal);
  }

  private setPaneStatus(status: string): void {
    this.paneStatus = status;
    this.setStatus();
  }

  private showState(state: number): void {
    if (state === AgentSessionState.UNSPECIFIED) return;
    const name = stateName(state);
    const badge = $("state");
    badge.textContent = name;
    badge.className = "badge state-" + name + (state === AgentSessionState.BLOCKED ? " attention" : "");
  }

  /* SubscribeAgentSession with a replay tail, then live.  After a drop it
   * resumes from the last frame received (since_seq), so nothing shows
   * twice and nothing is skipped; frames the server no longer has get a
   * marker and a fresh tail; a server that restarted (its instance epoch
   * changed) numbers its log anew, so the pane replays all of the new log
   * after a marker.  Ends at "ended" or "not found". */
  private async paneLoop(id: string, signal: AbortSignal): Promise<void> {
    let lastSeq = 0n;
    let epoch: bigint | null = null;
    let backoff = BACKOFF_MIN_MS;
    let quietEnds = 0;
    let connects = 0;
    while (!signal.aborted) {
      const current = await this.probeEpoch(signal);
      if (signal.aborted) return;
      let tail = TAIL;
      if (epoch !== null && current !== null && current !== epoch) {
        this.pane.marker("the server restarted: its log starts again here", "restarted");
        lastSeq = 0n;
        tail = ALL_RETAINED;
      }
      if (current !== null) epoch = current;
      const logEpoch = (epoch ?? 0n).toString();
      let received = 0;
      try {
        const stream = this.client.subscribeAgentSession(
          { sessionId: id, sinceSeq: lastSeq, tail: lastSeq === 0n ? tail : 0 },
          {
            headers: this.headers(),
            signal,
            timeoutMs: 0,
            onHeader: () => {
              this.setPaneStatus("live");
              backoff = BACKOFF_MIN_MS;
              // The open asked already; each reconnect asks again.
              if (connects++ > 0) void this.loadControl(id, signal);
            },
          },
        );
        for await (const f of stream) {
          if (f.seq <= lastSeq) continue; // never shown twice
          lastSeq = f.seq;
          received++;
          this.onFrame(f, logEpoch);
        }
        // Ended OK: the session's tail is over, or this pane fell behind.
        quietEnds = received > 0 ? 0 : quietEnds + 1;
        const state = await this.sessionState(id, signal);
        if (signal.aborted) return;
        if ((state !== null && isEnded(state)) || quietEnds >= 2) {
          if (state !== null) this.showState(state);
          this.setPaneStatus("ended");
          return;
        }
        continue;
      } catch (e) {
        const err = this.failed(e);
        if (signal.aborted || err.code === Code.Unauthenticated) return;
        if (err.code === Code.NotFound) {
          this.setPaneStatus("not found");
          return;
        }
        if (err.code === Code.OutOfRange) {
          this.pane.marker("frames were evicted: the server no longer has what came after the last one shown", "evicted");
          lastSeq = 0n;
          continue;
        }
      }
      this.setPaneStatus("reconnecting");
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    }
  }

  private async sessionState(id: string, signal: AbortSignal): Promise<number | null> {
    try {
      const r = await this.client.getAgentStatus({ sessionId: id }, { headers: this.headers(), signal });
      const s = r.statuses.find((x) => x.sessionId === id);
      if (s) this.setControl(id, s.callerMayControl, signal);
      return s ? s.state : null;
    } catch (e) {
      this.failed(e);
      return null;
    }
  }

  private onFrame(f: AgentSessionFrame, logEpoch: string): void {
    this.pane.push(f, logEpoch);
    if (f.state !== AgentSessionState.UNSPECIFIED) this.showState(f.state);
    const ev = f.event?.event;
    if (ev?.case === "batchPending") {
      this.batchCount = ev.value.count;
      this.batchFiresAt = Number(ev.value.firesAtUnixMs);
      this.renderBatch();
    }
  }

  // --- The batch window and the send box -----------------------------------

  /* Whether the caller may control this session (its owner or an admin):
   * GetAgentStatus says so in caller_may_control, read-only.  Asked each
   * time the pane's stream (re)connects, so a change of role is seen after
   * a reconnect at the latest; a failed ask leaves the last answer. */
  private async loadControl(id: string, signal: AbortSignal): Promise<void> {
    try {
      const r = await this.client.getAgentStatus({ sessionId: id }, { headers: this.headers(), signal });
      const s = r.statuses.find((x) => x.sessionId === id);
      this.setControl(id, s ? s.callerMayControl : false, signal);
    } catch (e) {
      const err = this.failed(e);
      if (err.code === Code.NotFound) this.setControl(id, false, signal);
    }
  }

  private setControl(id: string, may: boolean, signal: AbortSignal): void {
    if (signal.aborted || id !== this.openId) return;
    this.mayControl = may;
    this.renderBatch();
  }

  private renderBatch(): void {
    const pending = this.openId !== "" && this.batchCount > 0;
    // What the server said about the caller's control: "true", "false", or
    // "null" while not known yet.
    $("batch").dataset.mayControl = String(this.mayControl);
    $("batch").hidden = !pending;
    $("skip-batch").hidden = !(pending && this.mayControl === true);
    if (!pending) return;
    $("batch-count").textContent = String(this.batchCount);
    const left = Math.max(0, Math.ceil((this.batchFiresAt - Date.now()) / 1000));
    $("batch-countdown").textContent = this.batchFiresAt > 0 ? `delivered in ${left} s` : "waiting for the agent";
  }

  private async skipBatch(): Promise<void> {
    const id = this.openId;
    const button = $("skip-batch") as HTMLButtonElement;
    button.disabled = true;
    try {
      await this.client.skipBatchWindow({ sessionId: id }, { headers: this.headers() });
    } catch (e) {
      $("batch-countdown").textContent = "skip failed: " + this.failed(e).rawMessage;
    } finally {
      button.disabled = false;
    }
  }

  private async send(): Promise<void> {
    const input = $("send") as HTMLInputElement;
    const text = input.value;
    const id = this.openId;
    if (!text || !id) return;
    const result = $("send-result");
    result.textContent = "sending";
    try {
      await this.client.sendAgentMessage({ sessionId: id, text }, { headers: this.headers() });
      input.value = "";
      result.textContent = "sent";
    } catch (e) {
      result.textContent = "not sent: " + this.failed(e).rawMessage;
    }
  }
}

new Page();
