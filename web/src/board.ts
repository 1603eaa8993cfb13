// The board: every session the caller may see, as a card in a column by
// state.  Updates are queued and rendered once per animation frame (and by a
// timer in a hidden tab), so a thousand sessions changing state hundreds of
// times a second cost the tab one batch of DOM work per frame.
//
// Text from sessions (ids, agent names, containers, owners, the latest
// activity) is untrusted and only ever set with textContent.
import { AgentSessionState } from "./gen/compass/v1/frames_pb";
import { stateName } from "./pane";

export type Column = "needs" | "working" | "idle" | "stopped";
export const COLUMNS: Column[] = ["needs", "working", "idle", "stopped"];
export const COLUMN_TITLES: Record<Column, string> = {
  needs: "Needs you",
  working: "Working",
  idle: "Idle / done",
  stopped: "Stopped",
};

/* The column of a state.  A session no Runner has reported yet
 * (unspecified) has nothing running, so it sits with the stopped ones. */
export function columnOf(state: number, asking: boolean): Column {
  switch (state) {
    case AgentSessionState.BLOCKED:
      return "needs";
    case AgentSessionState.STARTING:
    case AgentSessionState.WORKING:
      return asking ? "needs" : "working";
    case AgentSessionState.READY:
    case AgentSessionState.IDLE:
    case AgentSessionState.DONE:
      return asking ? "needs" : "idle";
    default:
      return "stopped";
  }
}

export function isEnded(state: number): boolean {
  return state === AgentSessionState.STOPPED || state === AgentSessionState.ERRORED;
}

/* "3 min", "2 h 5 min", "12 s". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  return `${Math.floor(h / 24)} d`;
}

export interface Session {
  id: string;
  state: number;
  agent: string;
  provider: string;
  nativeId: string;
  /* The container it runs in and the account that owns it ("" when none
   * does or the server did not say). */
  container: string;
  owner: string;
  /* When it entered its state (ms since the epoch), and whether that is
   * known or only "at least since the page saw it". */
  since: number;
  sinceKnown: boolean;
  activity: string;
  batch: number;
  mayControl: boolean;
  /* An ask record came after the latest state change: it waits for an answer. */
  asking: boolean;
  reason: string;
}

interface Card {
  s: Session;
  el: HTMLElement;
  column: Column | null;
  state: HTMLElement;
  since: HTMLElement;
  activity: HTMLElement;
  batch: HTMLElement;
  agent: HTMLElement;
  where: HTMLElement;
  sinceText: string;
  /* What the card shows now, so a render that changes nothing writes
   * nothing to the DOM. */
  shown: string;
}

function el(tag: string, cls?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

/* Sets EL's text.  A card's texts change often (time in state every
 * second, on every card): changing the data of its one text node costs the
 * browser a layout of it, where textContent replaces the node and has the
 * browser recompute its style and rebuild its layout object. */
function setText(e: HTMLElement, text: string): void {
  const t = e.firstChild;
  if (t && t.nodeType === Node.TEXT_NODE && !t.nextSibling) {
    if ((t as Text).data !== text) (t as Text).data = text;
  } else {
    e.textContent = text;
  }
}

const ACTIVITY_MAX = 140;
/* Cards one render batch renders at most, and the time it may take (it
 * stops after the card that passes it); the rest go in the next frame, so
 * a snapshot of a thousand sessions, or a burst queued while the tab was
 * busy, is spread over frames instead of one long task. */
export const BATCH_MAX = 50;
const BATCH_BUDGET_MS = 5;

/* One line of at most ACTIVITY_MAX characters: the end of TEXT, the
 * latest words being what matters in streamed text. */
export function oneLine(text: string): string {
  const t = text.replace(/\s+/g, " ").trim();
  return t.length > ACTIVITY_MAX ? "…" + t.slice(t.length - ACTIVITY_MAX + 1) : t;
}

/* Where cards go: one list per column (the stopped column's ended sessions
 * in a folded list of their own), and the count of each column. */
export interface BoardDom {
  lists: Record<Column, HTMLElement>;
  ended: HTMLElement;
  endedCount: HTMLElement;
  counts: Record<Column, HTMLElement[]>;
}

export class Board {
  private cards = new Map<string, Card>();
  private dirty = new Set<string>();
  private scheduled = false;
  private filterText = "";
  private filterColumn: Column | "" = "";
  private loaded = false;
  /* The first snapshot is queued: loaded once it is all rendered. */
  private loading = false;
  /* Called after each render batch with the sessions that entered and left
   * Needs you in it (live transitions only: not the first snapshot's). */
  onNeeds: ((entered: Session[], left: Session[], total: number) => void) | null = null;
  /* Each render batch's start and end (performance.now()) and how many
   * cards it changed, for whoever measures. */
  onRendered: ((start: number, end: number, changed: number) => void) | null = null;

  constructor(private dom: BoardDom) {}

  get size(): number {
    return this.cards.size;
  }

  get(id: string): Session | undefined {
    return this.cards.get(id)?.s;
  }

  ids(): string[] {
    return [...this.cards.keys()];
  }

  clear(): void {
    this.cards.clear();
    this.dirty.clear();
    this.loaded = false;
    this.loading = false;
    for (const c of COLUMNS) this.dom.lists[c].replaceChildren();
    this.dom.ended.replaceChildren();
    this.renderCounts();
  }

  /* A session's new or changed fields; AT is when it happened (ms), 0 when
   * not known.  Returns the session. */
  update(id: string, change: Partial<Session>, at = 0): Session {
    let card = this.cards.get(id);
    if (!card) {
      card = this.makeCard(id);
      this.cards.set(id, card);
    }
    const s = card.s;
    if (change.state !== undefined && change.state !== AgentSessionState.UNSPECIFIED && change.state !== s.state) {
      s.state = change.state;
      s.since = at || Date.now();
      s.sinceKnown = at > 0;
      s.asking = false;
    }
    if (change.agent) s.agent = change.agent;
    if (change.provider) s.provider = change.provider;
    if (change.nativeId) s.nativeId = change.nativeId;
    // A session's container and owner do not change; an event without them
    // (a store fault on the server) keeps what the page knows.
    if (change.container) s.container = change.container;
    if (change.owner) s.owner = change.owner;
    if (change.activity !== undefined) s.activity = oneLine(change.activity);
    if (change.batch !== undefined) s.batch = change.batch;
    if (change.mayControl !== undefined) s.mayControl = change.mayControl;
    if (change.asking !== undefined) s.asking = change.asking;
    if (change.reason !== undefined) s.reason = change.reason;
    this.dirty.add(id);
    this.schedule();
    return s;
  }

  /* Sessions not in KEEP leave the board (the caller may no longer see them). */
  retain(keep: Set<string>): void {
    for (const [id, card] of this.cards) {
      if (keep.has(id)) continue;
      card.el.remove();
      this.cards.delete(id);
      this.dirty.add(id);
    }
    this.schedule();
  }

  /* The first snapshot is in: from now on an entry into Needs you is a
   * transition worth telling. */
  markLoaded(): void {
    if (this.loaded) return;
    this.loading = true;
    this.schedule();
  }

  setFilter(text: string, column: Column | ""): void {
    this.filterText = text.trim().toLowerCase();
    this.filterColumn = column;
    for (const card of this.cards.values()) this.applyFilter(card);
  }

  private matches(card: Card): boolean {
    if (this.filterColumn && card.column !== this.filterColumn) return false;
    if (!this.filterText) return true;
    const s = card.s;
    const hay = `${s.id} ${s.agent} ${s.provider} ${s.nativeId} ${s.container} ${s.owner} ${stateName(s.state)} ${s.activity}`.toLowerCase();
    return hay.includes(this.filterText);
  }

  private applyFilter(card: Card): void {
    const hidden = !this.matches(card);
    if (card.el.hidden !== hidden) card.el.hidden = hidden;
  }

  private makeCard(id: string): Card {
    const li = el("li", "card");
    li.dataset.sessionId = id;
    const a = document.createElement("a");
    a.className = "card-link";
    a.href = "#session=" + encodeURIComponent(id);
    const head = el("span", "card-head");
    head.append(el("span", "card-id", id));
    const state = el("span", "badge");
    head.append(state);
    const agent = el("span", "card-meta");
    const where = el("span", "card-meta card-where");
    const since = el("span", "card-since");
    const activity = el("span", "card-activity");
    const batch = el("span", "card-batch");
    batch.hidden = true;
    a.append(head, agent, where, since, activity, batch);
    li.append(a);
    const s: Session = {
      id,
      state: AgentSessionState.UNSPECIFIED,
      agent: "",
      provider: "",
      nativeId: "",
      container: "",
      owner: "",
      since: Date.now(),
      sinceKnown: false,
      activity: "",
      batch: 0,
      mayControl: false,
      asking: false,
      reason: "",
    };
    return { s, el: li, column: null, state, since, activity, batch, agent, where, sinceText: "", shown: "" };
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      if (!this.scheduled) return;
      this.scheduled = false;
      this.flush();
    };
    requestAnimationFrame(run);
    setTimeout(run, 100);
  }

  /* Renders up to BATCH_MAX queued changes now, and schedules the rest. */
  flush(): void {
    if (this.dirty.size === 0) {
      this.finishLoading();
      return;
    }
    const t0 = performance.now();
    const entered: Session[] = [];
    const left: Session[] = [];
    let changed = 0;
    const now = Date.now();
    for (const id of this.dirty) {
      if (changed === BATCH_MAX || (changed > 0 && performance.now() - t0 > BATCH_BUDGET_MS)) break;
      changed++;
      this.dirty.delete(id);
      const card = this.cards.get(id);
      if (!card) {
        // Removed while in Needs you, it has left it too.
        left.push({ id } as Session);
        continue;
      }
      const before = card.column;
      this.render(card, now);
      if (before !== card.column) {
        if (card.column === "needs") entered.push(card.s);
        else if (before === "needs") left.push(card.s);
      }
    }
    this.renderCounts();
    if (this.onRendered) this.onRendered(t0, performance.now(), changed);
    if (this.onNeeds && (entered.length || left.length || !this.loaded)) {
      this.onNeeds(this.loaded ? entered : [], left, this.needs);
    }
    if (this.dirty.size > 0) this.schedule();
    else this.finishLoading();
  }

  private finishLoading(): void {
    if (!this.loading) return;
    this.loading = false;
    this.loaded = true;
  }

  private render(card: Card, now: number): void {
    const s = card.s;
    const name = stateName(s.state);
    const column = columnOf(s.state, s.asking);
    const ended = isEnded(s.state);
    const who = [s.agent || "no agent yet", s.provider && s.nativeId ? `${s.provider}:${s.nativeId}` : s.provider];
    const agent = who.filter(Boolean).join(" · ") + (s.mayControl ? " · yours" : "");
    const where = (s.container ? `in ${s.container}` : "no container") + " · " + (s.owner ? `owner ${s.owner}` : "no owner");
    // In Needs you the card says why; the latest activity stays in the tooltip.
    const activity = column === "needs" && s.reason ? s.reason : s.activity;
    const shown = [name, agent, where, activity, s.activity, s.batch].join("\n");
    if (shown !== card.shown) {
      card.shown = shown;
      card.el.dataset.state = name;
      setText(card.state, name);
      card.state.className = "badge state-" + name;
      setText(card.agent, agent);
      setText(card.where, where);
      setText(card.activity, activity);
      card.activity.title = s.activity;
      card.batch.hidden = s.batch <= 0;
      setText(card.batch, s.batch > 0 ? `${s.batch} message(s) pending` : "");
      card.el.dataset.batch = String(s.batch);
    }
    this.renderSince(card, now);
    const list = ended ? this.dom.ended : this.dom.lists[column];
    if (card.column !== column || card.el.parentElement !== list) {
      if (column === "needs" && this.loaded && card.column !== null) {
        card.el.classList.add("entered");
      } else if (column !== "needs") {
        card.el.classList.remove("entered");
      }
      card.column = column;
      card.el.dataset.column = column;
      card.el.classList.toggle("needs", column === "needs");
      this.insertSorted(list, card.el, s.id);
    }
    this.applyFilter(card);
  }

  private renderSince(card: Card, now: number): void {
    const text = `${stateName(card.s.state)} ${card.s.sinceKnown ? "" : "≥ "}${duration(now - card.s.since)}`;
    if (text !== card.sinceText) {
      card.sinceText = text;
      setText(card.since, text);
    }
  }

  /* Time in state moves on without a server call. */
  tick(): void {
    const now = Date.now();
    for (const card of this.cards.values()) this.renderSince(card, now);
  }

  /* Cards in a column are in session id order. */
  private insertSorted(list: HTMLElement, li: HTMLElement, id: string): void {
    const kids = list.children;
    let lo = 0;
    let hi = kids.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const k = kids[mid] as HTMLElement;
      if (k === li || (k.dataset.sessionId ?? "") < id) lo = mid + 1;
      else hi = mid;
    }
    const before = kids[lo] ?? null;
    if (before !== li) list.insertBefore(li, before);
  }

  /* Cards in Needs you, as of the last render. */
  private needs = 0;

  count(column: Column): number {
    let n = 0;
    for (const card of this.cards.values()) if (card.column === column) n++;
    return n;
  }

  private renderCounts(): void {
    const n: Record<Column, number> = { needs: 0, working: 0, idle: 0, stopped: 0 };
    let ended = 0;
    for (const card of this.cards.values()) {
      if (!card.column) continue;
      n[card.column]++;
      if (isEnded(card.s.state)) ended++;
    }
    this.needs = n.needs;
    for (const c of COLUMNS) {
      for (const e of this.dom.counts[c]) setText(e, String(n[c]));
    }
    setText(this.dom.endedCount, String(ended));
  }

  /* The cards shown, in reading order (column by column), for keyboard
   * navigation. */
  visibleCards(): HTMLElement[] {
    const out: HTMLElement[] = [];
    for (const c of COLUMNS) {
      for (const k of this.dom.lists[c].children) if (!(k as HTMLElement).hidden) out.push(k as HTMLElement);
      if (c === "stopped" && (this.dom.ended.closest("details") as HTMLDetailsElement | null)?.open) {
        for (const k of this.dom.ended.children) if (!(k as HTMLElement).hidden) out.push(k as HTMLElement);
      }
    }
    return out;
  }
}
