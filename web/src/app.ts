// The page: sign in with a token; the board of every session the caller
// may see, in columns by state (live from SubscribeEvents), with attention
// for the ones that need the user; one session's pane (live from
// SubscribeAgentSession), its batch window and its send box.
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
import { Attention } from "./attention";
import { Board, COLUMNS, duration } from "./board";
import type { BoardDom, Column } from "./board";
import { PaneView, askText, stateName } from "./pane";

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
/* Each board render batch is a User Timing measure of this name (read by
 * whoever measures the page); at most this many are kept. */
const RENDER_MEASURE = "agenthub-board-render";
const RENDER_MEASURES_KEPT = 20000;
/* Where the page is laid out for a phone (as style.css says). */
const NARROW = "(max-width: 700px)";
/* Activity text kept per session (the card shows its tail). */
const ACTIVITY_KEEP = 400;

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

function boardDom(): BoardDom {
  const lists = {} as Record<Column, HTMLElement>;
  const counts = {} as Record<Column, HTMLElement[]>;
  for (const c of COLUMNS) {
    lists[c] = document.querySelector(`[data-list="${c}"]`) as HTMLElement;
    counts[c] = [...document.querySelectorAll(`[data-count="${c}"]`)] as HTMLElement[];
  }
  return { lists, counts, ended: $("ended"), endedCount: $("ended-count") };
}

function editing(target: EventTarget | null): boolean {
  const t = target as HTMLElement | null;
  return !!t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
}

class Page {
  private token = "";
  client: Compass;
  private signedIn: AbortController | null = null;
  /* The panes: the first, and the one beside it in split view. */
  private slots: Slot[];
  board = new Board(boardDom());
  private attention = new Attention($("favicon") as HTMLLinkElement, $("notify") as HTMLButtonElement);
  /* The latest streamed text per session, and whether it was thinking. */
  private chunks = new Map<string, { text: string; thought: boolean }>();
  /* Per session, the last_seq of the newest status the board applied from
   * the events stream.  GetAgentStatus answers on a call of its own, so its
   * answer can arrive after a status event that is newer than it: a
   * snapshot status older than this is stale and must not undo the event. */
  private statusSeqs = new Map<string, bigint>();
  private measures = 0;
  private eventsStatus = "reconnecting";
  /* The session whose pane was opened last (Shift+Enter on a card opens
   * another beside it), and the one a pick from the board goes beside. */
  private lastOpen = "";
  private pickFor = "";
  /* A phone has room for one pane: split view shows only the first. */
  private narrow = window.matchMedia(NARROW);

  constructor() {
    const transport = createGrpcWebTransport({ baseUrl: location.origin, useBinaryFormat: true });
    this.client = createClient(CompassService, transport);
    this.slots = [new Slot(this, ""), new Slot(this, "-2")];
    $("signin").addEventListener("submit", (e) => {
      e.preventDefault();
      const input = $("token") as HTMLInputElement;
      const token = input.value.trim();
      input.value = "";
      if (token) this.signIn(token);
    });
    $("logout").addEventListener("click", () => this.signOut(""));
    window.addEventListener("hashchange", () => this.route());
    this.narrow.addEventListener("change", () => this.route());
    // A card opened with Shift, or picked for split view, opens beside.
    $("sessions").addEventListener("click", (e) => {
      const a = (e.target as HTMLElement).closest("a.card-link") as HTMLElement | null;
      const id = a?.closest("[data-session-id]")?.getAttribute("data-session-id");
      if (!id || !this.openBeside(id, e.shiftKey)) return;
      e.preventDefault();
    });
    $("split").addEventListener("click", () => {
      if (this.slots[0].openId) location.hash = "#pick=" + encodeURIComponent(this.slots[0].openId);
    });
    $("close-2").addEventListener("click", () => this.closeSplit(1));
    $("close").addEventListener("click", () => this.closeSplit(0));
    this.board.onNeeds = (entered, left, total) => this.attention.update(entered, left, total);
    this.board.onRendered = (start, end, changed) => this.measure(start, end, changed);
    const filter = () =>
      this.board.setFilter(($("filter") as HTMLInputElement).value, ($("state-filter") as HTMLSelectElement).value as Column | "");
    $("filter").addEventListener("input", filter);
    $("state-filter").addEventListener("change", filter);
    document.addEventListener("keydown", (e) => this.onKey(e));
    setInterval(() => {
      for (const slot of this.slots) slot.renderBatch();
    }, 500);
    setInterval(() => {
      this.board.tick();
      for (const slot of this.slots) slot.renderSince();
    }, 1000);
    const saved = sessionStorage.getItem(TOKEN_KEY);
    if (saved) this.signIn(saved);
    else this.setStatus();
  }

  headers(): Record<string, string> {
    return { authorization: "Bearer " + this.token };
  }

  /* #status: the first pane's, else the sessions stream's.  Each pane's
   * own is its view's data-status. */
  setStatus(): void {
    let text = "signed out";
    const first = this.slots[0];
    if (this.signedIn) text = first.openId ? first.paneStatus || "reconnecting" : this.eventsStatus;
    $("status").textContent = text;
    $("status").dataset.status = text;
    for (const slot of this.slots) slot.view.dataset.status = slot.openId ? slot.paneStatus || "reconnecting" : "";
  }

  // --- Signing in and out --------------------------------------------------

  private signIn(token: string): void {
    this.signOut("");
    this.token = token;
    sessionStorage.setItem(TOKEN_KEY, token);
    const ctl = new AbortController();
    this.signedIn = ctl;
    $("signin-error").textContent = "";
    $("signin-main").hidden = true;
    $("main").hidden = false;
    $("counts").hidden = false;
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
    for (const slot of this.slots) slot.close();
    if (this.signedIn) this.signedIn.abort();
    this.signedIn = null;
    this.token = "";
    sessionStorage.removeItem(TOKEN_KEY);
    this.board.clear();
    this.chunks.clear();
    this.attention.reset();
    $("whoami").textContent = "";
    $("signin-main").hidden = false;
    $("main").hidden = true;
    $("counts").hidden = true;
    $("logout").hidden = true;
    $("signin-error").textContent = why;
    this.setStatus();
  }

  /* A call failed: a refused token signs out.  Returns the error. */
  failed(e: unknown): ConnectError {
    const err = ConnectError.from(e);
    if (err.code === Code.Unauthenticated && this.signedIn) this.signOut("the token was refused: " + err.rawMessage);
    return err;
  }

  // --- The board ---------------------------------------------------------

  private measure(start: number, end: number, changed: number): void {
    try {
      performance.measure(RENDER_MEASURE, { start, end, detail: changed });
      if (++this.measures > RENDER_MEASURES_KEPT) {
        performance.clearMeasures(RENDER_MEASURE);
        this.measures = 0;
      }
    } catch {
      // A browser without User Timing level 3: nothing to record.
    }
  }

  private setState(id: string, state: number): void {
    for (const slot of this.slots) if (id === slot.openId) slot.showState(state);
  }

  private async snapshot(signal: AbortSignal): Promise<void> {
    try {
      const r = await this.client.getAgentStatus({ sessionId: "" }, { headers: this.headers(), signal });
      // Sessions the caller may no longer see leave the board.
      this.board.retain(new Set(r.statuses.map((s) => s.sessionId)));
      for (const s of r.statuses) {
        const seen = this.statusSeqs.get(s.sessionId);
        if (seen !== undefined && s.lastSeq < seen) continue;
        this.board.update(s.sessionId, {
          state: s.state,
          agent: s.agentAccountId,
          provider: s.provider,
          nativeId: s.nativeId,
          container: s.container,
          owner: s.owner,
          mayControl: s.callerMayControl,
          reason: s.state === AgentSessionState.BLOCKED ? "waiting for permission" : undefined,
        });
        this.setState(s.sessionId, s.state);
      }
      this.board.markLoaded();
    } catch (e) {
      this.failed(e);
    }
  }

  private applyEvent(r: SubscribeEventsResponse): void {
    const at = Number(r.atUnixMs);
    const p = r.payload;
    switch (p.case) {
      case "agentSessionStatus": {
        const v = p.value;
        this.statusSeqs.set(v.sessionId, v.lastSeq);
        const blocked = v.state === AgentSessionState.BLOCKED;
        // An ask that came just before its BLOCKED keeps its words.
        const reason = blocked ? this.board.get(v.sessionId)?.reason || "waiting for permission" : "";
        this.board.update(
          v.sessionId,
          {
            state: v.state,
            agent: v.agentAccountId,
            provider: v.provider,
            nativeId: v.nativeId,
            container: v.container,
            owner: v.owner,
            reason,
          },
          at,
        );
        this.setState(v.sessionId, v.state);
        return;
      }
      case "agentMessageChunk": {
        const v = p.value;
        const last = this.chunks.get(v.sessionId);
        let text = last && last.thought === v.isThought ? last.text + v.text : v.text;
        if (text.length > ACTIVITY_KEEP) text = text.slice(-ACTIVITY_KEEP);
        this.chunks.set(v.sessionId, { text, thought: v.isThought });
        this.board.update(v.sessionId, { activity: (v.isThought ? "thinking: " : "") + text }, at);
        return;
      }
      case "agentToolCall": {
        const v = p.value;
        this.chunks.delete(v.sessionId);
        const status = ["", "pending", "running", "done", "failed"][v.status] ?? "";
        this.board.update(v.sessionId, { activity: `tool: ${v.title || v.toolCallId}${status ? " (" + status + ")" : ""}` }, at);
        return;
      }
      case "agentPlan": {
        const v = p.value;
        this.chunks.delete(v.sessionId);
        const done = v.entries.filter((x) => x.status === 3).length;
        this.board.update(v.sessionId, { activity: `plan: ${done} of ${v.entries.length} done` }, at);
        return;
      }
      case "sessionBatchPending":
        if (r.sessionId) this.board.update(r.sessionId, { batch: p.value.count }, at);
        return;
      case "agentRecord": {
        const v = p.value;
        const id = r.sessionId;
        if (!id) return;
        this.chunks.delete(id);
        if (v.type === "ask") {
          const reason = askText(v.dataJson);
          this.board.update(id, { asking: true, reason, activity: reason }, at);
        } else {
          this.board.update(id, { activity: `record: ${v.type}` }, at);
        }
        return;
      }
      default:
        return;
    }
  }

  // --- Keys: the board's cards, and back from the pane --------------------

  private onKey(e: KeyboardEvent): void {
    if (!this.signedIn || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "Escape") {
      if (this.slots[0].openId || this.pickFor) {
        e.preventDefault();
        location.hash = "#board";
      } else if (editing(e.target)) {
        (e.target as HTMLElement).blur();
        this.focusCard(0, 0);
      }
      return;
    }
    if (this.slots[0].openId || editing(e.target)) return;
    if (e.key === "Enter" && e.shiftKey) {
      const id = (e.target as HTMLElement).closest?.("[data-session-id]")?.getAttribute("data-session-id");
      if (id && this.openBeside(id, true)) e.preventDefault();
      return;
    }
    const moves: Record<string, [number, number]> = {
      ArrowDown: [1, 0],
      j: [1, 0],
      ArrowUp: [-1, 0],
      k: [-1, 0],
      ArrowRight: [0, 1],
      l: [0, 1],
      ArrowLeft: [0, -1],
      h: [0, -1],
    };
    const m = moves[e.key];
    if (!m) return;
    e.preventDefault();
    this.focusCard(m[0], m[1]);
  }

  /* Moves the focus DOWN cards within a column, or ACROSS columns. */
  private focusCard(down: number, across: number): void {
    const cards = this.board.visibleCards();
    if (cards.length === 0) return;
    const current = (document.activeElement as HTMLElement | null)?.closest("[data-session-id]") as HTMLElement | null;
    let i = current ? cards.indexOf(current) : -1;
    if (i < 0) {
      i = 0;
    } else if (across !== 0) {
      const col = (c: HTMLElement) => COLUMNS.indexOf((c.dataset.column ?? "stopped") as Column);
      const mine = col(cards[i]);
      const row = cards.filter((c) => col(c) === mine).indexOf(cards[i]);
      for (let target = mine + across; target >= 0 && target < COLUMNS.length; target += across) {
        const there = cards.filter((c) => col(c) === target);
        if (there.length) {
          i = cards.indexOf(there[Math.min(row, there.length - 1)]);
          break;
        }
      }
    } else {
      i = Math.min(cards.length - 1, Math.max(0, i + down));
    }
    (cards[i].querySelector("a") as HTMLElement).focus();
  }

  /* SubscribeEvents, resumed from the last event after a drop; a resync
   * (another server instance, or events gone) takes a fresh snapshot.  From
   * since 0 the server sends its own snapshot first (each session's latest
   * status), which applyEvent takes like any status; GetAgentStatus adds
   * the ended sessions and caller_may_control. */
  private async eventsLoop(signal: AbortSignal): Promise<void> {
    let since = 0n;
    let epoch = 0n;
    let backoff = BACKOFF_MIN_MS;
    while (!signal.aborted) {
      let resync = false;
      // From the live tail, a fresh snapshot follows and the seqs it is
      // compared with start again (a restarted server may number anew).
      if (since === 0n) this.statusSeqs.clear();
      try {
        const stream = this.client.subscribeEvents(
          // agenthubPayloads: the page shows records and batch windows too.
          { sinceSeq: since, instanceEpoch: epoch, agenthubPayloads: true },
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
          // A ServerStatus change carries seq 0: no position, the cursor stays.
          if (r.seq !== 0n) since = r.seq;
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
  async probeEpoch(signal: AbortSignal): Promise<bigint | null> {
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

  // --- The panes -----------------------------------------------------------

  /* #board (or nothing): the board; #session=ID: that session's pane;
   * #split=A,B: A's pane and B's side by side (on a phone, A's alone);
   * #pick=A: the board, where the card chosen opens beside A. */
  private route(): void {
    if (!this.signedIn) return;
    const hash = location.hash;
    let ids: string[] = [];
    let m = /^#session=(.+)$/.exec(hash);
    if (m) ids = [decodeURIComponent(m[1])];
    m = /^#split=([^,]+),(.+)$/.exec(hash);
    if (m) ids = [decodeURIComponent(m[1]), decodeURIComponent(m[2])];
    m = /^#pick=(.+)$/.exec(hash);
    this.pickFor = m ? decodeURIComponent(m[1]) : "";
    $("pick").hidden = this.pickFor === "";
    $("pick-for").textContent = this.pickFor;
    if (this.narrow.matches) ids = ids.slice(0, 1);
    const split = ids.length === 2;
    $("board").hidden = ids.length > 0;
    $("view").hidden = ids.length === 0;
    $("view-2").hidden = !split;
    $("main").dataset.split = String(split);
    document.body.dataset.view = split ? "split" : ids.length ? "pane" : "board";
    $("split").hidden = split;
    $("close").hidden = !split;
    const from = this.slots[0].openId;
    let opened = false;
    this.slots.forEach((slot, i) => {
      const id = ids[i] ?? "";
      if (id === slot.openId) return;
      slot.close();
      if (!id) return;
      slot.open(id);
      opened = true;
    });
    if (ids.length) this.lastOpen = ids[0];
    if (opened) {
      this.slots[ids.length - 1].pane.root.focus({ preventScroll: true });
    } else if (!ids.length && (from || this.pickFor)) {
      // Back on the board, on the card just left.
      const back = from || this.pickFor;
      const a = document.querySelector(`[data-session-id="${CSS.escape(back)}"] a`) as HTMLElement | null;
      if (a) a.focus();
    }
    this.setStatus();
  }

  /* A card was opened; SHIFT held.  When it goes beside another pane,
   * goes there and returns true; else the card's own link opens it. */
  private openBeside(id: string, shift: boolean): boolean {
    const other = this.pickFor || (shift ? this.lastOpen : "");
    if (!other) return false;
    location.hash = other === id ? "#session=" + encodeURIComponent(id) : splitHash(other, id);
    return true;
  }

  /* Split view's pane I closes; the other stays, alone. */
  private closeSplit(i: number): void {
    const other = this.slots[1 - i].openId;
    location.hash = other ? "#session=" + encodeURIComponent(other) : "#board";
  }
}

function splitHash(a: string, b: string): string {
  return "#split=" + encodeURIComponent(a) + "," + encodeURIComponent(b);
}

/* What a pane needs from the page. */
interface SlotHost {
  client: Compass;
  board: Board;
  headers(): Record<string, string>;
  failed(e: unknown): ConnectError;
  probeEpoch(signal: AbortSignal): Promise<bigint | null>;
  setStatus(): void;
}

/* One pane: a session's frames from its own SubscribeAgentSession stream,
 * its sticky head, its batch window and its send box.  Its elements are the
 * page's ids with SUFFIX ("" for the first pane, "-2" for the one beside). */
class Slot {
  ctl: AbortController | null = null;
  openId = "";
  paneStatus = "";
  pane: PaneView;
  view: HTMLElement;
  private batchCount = 0;
  private batchFiresAt = 0;
  private mayControl: boolean | null = null;

  constructor(
    private host: SlotHost,
    private suffix: string,
  ) {
    this.view = this.el("view");
    this.pane = new PaneView(this.el("pane"), DOM_CAP);
    this.el("skip-batch").addEventListener("click", () => void this.skipBatch());
    this.el("send-form").addEventListener("submit", (e) => {
      e.preventDefault();
      void this.send();
    });
    this.el("jump").addEventListener("click", () => this.pane.jumpToLatest());
    this.pane.onFollow = (following) => (this.el("jump").hidden = following);
  }

  private el(name: string): HTMLElement {
    return $(name + this.suffix);
  }

  close(): void {
    if (this.ctl) this.ctl.abort();
    this.ctl = null;
    this.openId = "";
    this.paneStatus = "";
    this.pane.reset();
    this.batchCount = 0;
    this.mayControl = null;
    this.el("pane-title").textContent = "No session open";
    this.el("state").textContent = "";
    this.el("state-since").textContent = "";
    this.el("jump").hidden = true;
    this.el("send-form").hidden = true;
    this.el("send-result").textContent = "";
    this.renderBatch();
    this.host.setStatus();
  }

  open(id: string): void {
    const ctl = new AbortController();
    this.ctl = ctl;
    this.openId = id;
    this.paneStatus = "reconnecting";
    this.el("pane-title").textContent = id;
    this.el("send-form").hidden = false;
    this.host.setStatus();
    void this.loadControl(id, ctl.signal);
    void this.paneLoop(id, ctl.signal);
  }

  private setPaneStatus(status: string): void {
    this.paneStatus = status;
    this.host.setStatus();
  }

  showState(state: number): void {
    if (state === AgentSessionState.UNSPECIFIED) return;
    const name = stateName(state);
    const badge = this.el("state");
    badge.textContent = name;
    badge.className = "badge state-" + name + (state === AgentSessionState.BLOCKED ? " attention" : "");
    this.renderSince();
  }

  /* The open session's time in its state: from its frames when the pane
   * saw the change, else from the board. */
  renderSince(): void {
    if (!this.openId) return;
    const since = this.pane.stateSince || this.host.board.get(this.openId)?.since || 0;
    this.el("state-since").textContent = since > 0 ? "for " + duration(Date.now() - since) : "";
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
      const current = await this.host.probeEpoch(signal);
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
        const stream = this.host.client.subscribeAgentSession(
          // agenthubEvents: the pane shows records and batch windows too.
          {
            sessionId: id,
            sinceSeq: lastSeq,
            tail: lastSeq === 0n ? tail : 0,
            agenthubEvents: true,
          },
          {
            headers: this.host.headers(),
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
        const err = this.host.failed(e);
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
      const r = await this.host.client.getAgentStatus({ sessionId: id }, { headers: this.host.headers(), signal });
      const s = r.statuses.find((x) => x.sessionId === id);
      if (s) this.setControl(id, s.callerMayControl, signal);
      return s ? s.state : null;
    } catch (e) {
      this.host.failed(e);
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
      const r = await this.host.client.getAgentStatus({ sessionId: id }, { headers: this.host.headers(), signal });
      const s = r.statuses.find((x) => x.sessionId === id);
      this.setControl(id, s ? s.callerMayControl : false, signal);
    } catch (e) {
      const err = this.host.failed(e);
      if (err.code === Code.NotFound) this.setControl(id, false, signal);
    }
  }

  private setControl(id: string, may: boolean, signal: AbortSignal): void {
    if (signal.aborted || id !== this.openId) return;
    this.mayControl = may;
    this.renderBatch();
  }

  renderBatch(): void {
    const pending = this.openId !== "" && this.batchCount > 0;
    // What the server said about the caller's control: "true", "false", or
    // "null" while not known yet.
    this.el("batch").dataset.mayControl = String(this.mayControl);
    this.el("batch").hidden = !pending;
    this.el("skip-batch").hidden = !(pending && this.mayControl === true);
    if (!pending) return;
    this.el("batch-count").textContent = String(this.batchCount);
    const left = Math.max(0, Math.ceil((this.batchFiresAt - Date.now()) / 1000));
    this.el("batch-countdown").textContent = this.batchFiresAt > 0 ? `delivered in ${left} s` : "waiting for the agent";
  }

  private async skipBatch(): Promise<void> {
    const id = this.openId;
    const button = this.el("skip-batch") as HTMLButtonElement;
    button.disabled = true;
    try {
      await this.host.client.skipBatchWindow({ sessionId: id }, { headers: this.host.headers() });
    } catch (e) {
      this.el("batch-countdown").textContent = "skip failed: " + this.host.failed(e).rawMessage;
    } finally {
      button.disabled = false;
    }
  }

  private async send(): Promise<void> {
    const input = this.el("send") as HTMLInputElement;
    const text = input.value;
    const id = this.openId;
    if (!text || !id) return;
    const result = this.el("send-result");
    result.textContent = "sending";
    try {
      await this.host.client.sendAgentMessage({ sessionId: id, text }, { headers: this.host.headers() });
      input.value = "";
      result.textContent = "sent";
    } catch (e) {
      result.textContent = "not sent: " + this.host.failed(e).rawMessage;
    }
  }
}

new Page();
