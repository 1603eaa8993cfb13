// The observation pane: frames in, DOM out.
//
// Every frame becomes exactly one element carrying data-seq and data-type,
// placed in a block: streamed thinking (folded, set apart) and assistant
// text join the paragraph of their message, a tool call's updates fold
// under one line with its status and duration, a plan is a checklist with
// its progress, an ask reads as a sentence (its raw record behind a
// toggle), permission waits are highlighted, a state change is a badge.
// Text is only ever set with textContent: a frame is untrusted input and
// never becomes markup.
//
// The pane follows the newest frame while the reader is at the bottom;
// scrolled up, new frames never move what the reader is reading, and
// onFollow says so (the page shows "jump to latest").
//
// Frames are queued and rendered once per animation frame, and the pane
// keeps at most `cap` frame elements (the oldest go first), so a session
// streaming a thousand frames a second, or a hundred thousand in all, never
// grows the document without bound.
import type { AgentSessionFrame } from "./gen/compass/v1/frames_pb";
import { AgentPlanEntryStatus, AgentSessionState, AgentToolCallStatus } from "./gen/compass/v1/frames_pb";

export const STATE_NAMES: Record<number, string> = {
  [AgentSessionState.UNSPECIFIED]: "unspecified",
  [AgentSessionState.STARTING]: "starting",
  [AgentSessionState.READY]: "ready",
  [AgentSessionState.WORKING]: "working",
  [AgentSessionState.STOPPED]: "stopped",
  [AgentSessionState.ERRORED]: "errored",
  [AgentSessionState.DISCONNECTED]: "disconnected",
  [AgentSessionState.BLOCKED]: "blocked",
  [AgentSessionState.DONE]: "done",
  [AgentSessionState.IDLE]: "idle",
};

export function stateName(state: number): string {
  return STATE_NAMES[state] ?? "unknown";
}

const TOOL_STATUS: Record<number, string> = {
  [AgentToolCallStatus.UNSPECIFIED]: "",
  [AgentToolCallStatus.PENDING]: "pending",
  [AgentToolCallStatus.IN_PROGRESS]: "running",
  [AgentToolCallStatus.COMPLETED]: "done",
  [AgentToolCallStatus.FAILED]: "failed",
};

const PLAN_STATUS: Record<number, string> = {
  [AgentPlanEntryStatus.UNSPECIFIED]: "pending",
  [AgentPlanEntryStatus.PENDING]: "pending",
  [AgentPlanEntryStatus.IN_PROGRESS]: "in progress",
  [AgentPlanEntryStatus.COMPLETED]: "done",
};

/* A readable sentence for an ask record's data (JSON written by the
 * agent): "Waiting for permission to run Bash".  Whatever the data holds
 * stays text; a record that is not JSON, or names no tool, still reads. */
export function askText(dataJson: string): string {
  let data: unknown = null;
  try {
    data = JSON.parse(dataJson);
  } catch {
    data = null;
  }
  const o = data && typeof data === "object" && !Array.isArray(data) ? (data as Record<string, unknown>) : {};
  const str = (k: string) => (typeof o[k] === "string" && o[k] ? (o[k] as string) : "");
  const tool = str("tool_name") || str("tool") || str("name");
  const input = o["tool_input"] && typeof o["tool_input"] === "object" ? (o["tool_input"] as Record<string, unknown>) : {};
  const command = typeof input["command"] === "string" ? (input["command"] as string) : str("command");
  const question = str("question") || str("message") || str("prompt");
  let text = tool ? `Waiting for permission to run ${tool}` : "Waiting for an answer";
  if (command) text += `: ${command}`;
  if (question) text += ` (${question})`;
  return text;
}

/* A record's data as indented JSON when it parses, else as it came. */
function prettyJson(dataJson: string): string {
  try {
    return JSON.stringify(JSON.parse(dataJson), null, 2);
  } catch {
    return dataJson;
  }
}

function seconds(ms: number): string {
  return ms < 10000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

/* What a frame is, as data-type says: the event's case, or "state" for a
 * frame that carries only a state. */
export function frameType(frame: AgentSessionFrame): string {
  const c = frame.event?.event.case;
  if (!c) return "state";
  return c.replace(/[A-Z]/g, (m) => "_" + m.toLowerCase());
}

function el(tag: string, cls?: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

interface Queued {
  frame: AgentSessionFrame;
  log: string; // the server instance whose log numbered it
}

interface Block {
  el: HTMLElement;
  key: string; // "" when nothing merges into it
  frames: number;
  body?: HTMLElement; // where merged frames go, when not el itself
  startedAt?: number; // a tool call's first frame (ms)
}

export class PaneView {
  private queue: Queued[] = [];
  private blocks: Block[] = [];
  private first = 0; // index of the oldest live block in blocks
  private byKey = new Map<string, Block>();
  private frameCount = 0;
  private scheduled = false;
  private dropped = 0;
  private following = true;
  onRendered: (() => void) | null = null;
  /* Called when the pane starts or stops following the newest frame. */
  onFollow: ((following: boolean) => void) | null = null;

  constructor(
    readonly root: HTMLElement,
    private cap: number,
  ) {
    root.addEventListener("scroll", () => this.setFollowing(this.atBottom()), { passive: true });
  }

  private atBottom(): boolean {
    return this.root.scrollTop + this.root.clientHeight >= this.root.scrollHeight - 24;
  }

  private setFollowing(f: boolean): void {
    if (f === this.following) return;
    this.following = f;
    if (this.onFollow) this.onFollow(f);
  }

  /* Back to the newest frame, following again. */
  jumpToLatest(): void {
    this.trim(this.cap);
    this.root.scrollTop = this.root.scrollHeight;
    this.setFollowing(true);
  }

  /* Empties the pane (a new session). */
  reset(): void {
    this.queue = [];
    this.blocks = [];
    this.first = 0;
    this.byKey.clear();
    this.frameCount = 0;
    this.dropped = 0;
    this.state = AgentSessionState.UNSPECIFIED;
    this.stateSince = 0;
    this.root.replaceChildren();
    this.setFollowing(true);
  }

  /* Frames in seq order; LOG names the log their seqs belong to (a server
   * that restarted numbers its log anew), kept as data-log. */
  push(frame: AgentSessionFrame, log: string): void {
    this.queue.push({ frame, log });
    // Frames that would be evicted before they are ever seen are dropped
    // here, so a burst costs no more than cap elements of work.
    if (this.queue.length > this.cap * 2) {
      const drop = this.queue.length - this.cap;
      this.dropped += drop;
      this.queue.splice(0, drop);
    }
    this.schedule();
  }

  /* A line that is not a frame: evicted frames, a server restart. */
  marker(text: string, kind: string): void {
    this.flush();
    const m = el("div", "marker " + kind, text);
    m.dataset.marker = kind;
    this.addBlock({ el: m, key: "", frames: 0 });
    if (this.following) this.scrollToEnd();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // A hidden tab runs no animation frames; the timer keeps the queue
    // moving there too.
    const run = () => {
      if (!this.scheduled) return;
      this.scheduled = false;
      this.flush();
    };
    requestAnimationFrame(run);
    setTimeout(run, 100);
  }

  /* Renders every queued frame now. */
  flush(): void {
    if (this.queue.length === 0) return;
    const frames = this.queue;
    this.queue = [];
    if (frames.length > this.cap) {
      this.dropped += frames.length - this.cap;
      frames.splice(0, frames.length - this.cap);
    }
    if (this.dropped > 0) {
      const m = el("div", "marker skipped", `${this.dropped} frame(s) arrived faster than shown and were skipped`);
      m.dataset.marker = "skipped";
      this.addBlock({ el: m, key: "", frames: 0 });
      this.dropped = 0;
    }
    for (const q of frames) this.render(q.frame, q.log);
    if (this.following) {
      this.trim(this.cap);
      this.scrollToEnd();
    } else {
      // The reader is reading older frames: they stay (up to twice the
      // cap), and the browser's scroll anchoring keeps them where they are
      // when older ones do go.
      this.trim(this.cap * 2);
    }
    if (this.onRendered) this.onRendered();
  }

  private scrollToEnd(): void {
    this.root.scrollTop = this.root.scrollHeight;
  }

  private addBlock(b: Block): void {
    this.blocks.push(b);
    this.root.appendChild(b.el);
    if (b.key) this.byKey.set(b.key, b);
  }

  private last(): Block | undefined {
    return this.blocks.length > this.first ? this.blocks[this.blocks.length - 1] : undefined;
  }

  private frameEl(tag: string, cls: string, frame: AgentSessionFrame, type: string): HTMLElement {
    const e = el(tag, cls);
    e.dataset.seq = frame.seq.toString();
    e.dataset.log = this.log;
    e.dataset.type = type;
    this.frameCount++;
    return e;
  }

  private log = "";
  private state: number = AgentSessionState.UNSPECIFIED;
  /* When the latest state began (ms since the epoch; 0 when not known). */
  stateSince = 0;

  private render(frame: AgentSessionFrame, log: string): void {
    this.log = log;
    const type = frameType(frame);
    const ev = frame.event?.event;
    if (frame.state !== AgentSessionState.UNSPECIFIED && frame.state !== this.state) {
      this.state = frame.state;
      this.stateSince = Number(frame.atUnixMs);
    }
    // A permission wait: the frame that blocks, and what comes while blocked.
    const blocked = this.state === AgentSessionState.BLOCKED;
    switch (ev?.case) {
      case "thinking":
      case "assistantText": {
        const id = ev.value.messageId;
        const key = `${ev.case}:${id}`;
        let b = this.last();
        if (!b || b.key !== key) {
          const p = el("p", ev.case === "thinking" ? "thinking" : "assistant");
          if (id) p.dataset.messageId = id;
          if (ev.case === "thinking") {
            // Thinking is set apart and folds away.
            const d = el("details", "thinking-block");
            const summary = el("summary", "", "Thinking");
            d.append(summary, p);
            b = { el: d, key, frames: 0, body: p };
          } else {
            b = { el: p, key, frames: 0 };
          }
          this.addBlock(b);
        }
        const span = this.frameEl("span", "chunk", frame, type);
        span.textContent = ev.value.text;
        (b.body ?? b.el).appendChild(span);
        b.frames++;
        return;
      }
      case "toolCall":
      case "toolCallUpdate": {
        const id = ev.value.toolCallId;
        let b = id ? this.byKey.get("tool:" + id) : undefined;
        if (!b) {
          // One line (status, title, duration); the updates fold under it.
          const d = el("details", "tool");
          d.dataset.toolCallId = id;
          const summary = el("summary", "tool-line");
          summary.append(el("span", "tool-status"), el("span", "tool-title", id), el("span", "tool-duration"));
          const body = el("div", "tool-body");
          d.append(summary, body);
          b = { el: d, key: id ? "tool:" + id : "", frames: 0, body, startedAt: Number(frame.atUnixMs) };
          this.addBlock(b);
        }
        const line = b.el.firstChild as HTMLElement;
        const status = TOOL_STATUS[ev.value.status] ?? "";
        if (status) {
          (line.children[0] as HTMLElement).textContent = status;
          b.el.dataset.status = status;
          if ((status === "done" || status === "failed") && b.startedAt) {
            const took = Number(frame.atUnixMs) - b.startedAt;
            if (took >= 0) {
              (line.children[2] as HTMLElement).textContent = seconds(took);
              b.el.dataset.durationMs = String(took);
            }
          }
        }
        if (ev.case === "toolCall") {
          (line.children[1] as HTMLElement).textContent = ev.value.title || id;
          const e = this.frameEl("span", "tool-start", frame, type);
          b.body!.appendChild(e);
        } else {
          const e = this.frameEl("pre", "tool-output", frame, type);
          e.textContent = ev.value.output;
          b.body!.appendChild(e);
        }
        b.frames++;
        return;
      }
      case "plan": {
        for (const old of this.root.querySelectorAll(".plan.current")) old.classList.remove("current");
        const e = this.frameEl("div", "plan current", frame, type);
        const entries = ev.value.entries;
        const done = entries.filter((x) => x.status === AgentPlanEntryStatus.COMPLETED).length;
        const head = el("div", "plan-progress", `Plan: ${done} of ${entries.length} done`);
        const bar = el("progress", "plan-bar") as HTMLProgressElement;
        bar.max = Math.max(1, entries.length);
        bar.value = done;
        bar.setAttribute("aria-label", `${done} of ${entries.length} done`);
        e.dataset.done = String(done);
        e.dataset.total = String(entries.length);
        const ul = el("ul", "plan-list");
        for (const entry of entries) {
          const st = PLAN_STATUS[entry.status] ?? "pending";
          const li = el("li", "plan-" + st.replace(" ", "-"));
          li.dataset.status = st;
          li.appendChild(el("span", "mark", st === "done" ? "\u2611" : st === "in progress" ? "\u25d0" : "\u2610"));
          li.appendChild(el("span", "plan-text", " " + entry.content));
          li.appendChild(el("span", "visually-hidden", ` (${st})`));
          ul.appendChild(li);
        }
        e.append(head, bar, ul);
        this.addBlock({ el: e, key: "", frames: 1 });
        return;
      }
      case "notice": {
        const e = this.frameEl("div", blocked ? "notice attention" : "notice", frame, type);
        e.textContent = ev.value.text;
        this.addBlock({ el: e, key: "", frames: 1 });
        return;
      }
      case "record": {
        const ask = ev.value.type === "ask";
        const e = this.frameEl("div", ask || blocked ? "record attention" : "record", frame, type);
        e.dataset.recordType = ev.value.type;
        e.appendChild(el("div", "record-text", ask ? askText(ev.value.dataJson) : `Record: ${ev.value.type}`));
        // The record as the agent wrote it, folded.
        const raw = el("details", "record-raw");
        raw.append(el("summary", "", "raw record"));
        raw.append(el("pre", "record-data", `${ev.value.type} ${prettyJson(ev.value.dataJson)}`));
        e.appendChild(raw);
        this.addBlock({ el: e, key: "", frames: 1 });
        return;
      }
      case "batchPending": {
        const n = ev.value.count;
        const e = this.frameEl("div", "batch-frame", frame, type);
        e.textContent = n > 0 ? `${n} message(s) waiting for the agent` : "batch delivered";
        this.addBlock({ el: e, key: "", frames: 1 });
        return;
      }
      default: {
        const name = stateName(frame.state);
        const e = this.frameEl("div", blocked ? "state-change attention" : "state-change", frame, type);
        e.appendChild(el("span", "badge state-" + name, name));
        if (blocked) e.appendChild(el("span", "", " waiting for permission"));
        this.addBlock({ el: e, key: "", frames: 1 });
        return;
      }
    }
  }

  /* Drops the oldest frame elements until at most CAP are left. */
  private trim(cap: number): void {
    while (this.frameCount > cap && this.first < this.blocks.length) {
      const b = this.blocks[this.first];
      if (b.frames > 0 && b.frames <= this.frameCount - cap) {
        this.frameCount -= b.frames;
        b.frames = 0;
      }
      if (b.frames === 0) {
        b.el.remove();
        if (b.key && this.byKey.get(b.key) === b) this.byKey.delete(b.key);
        this.first++;
        continue;
      }
      // A long block loses its oldest frames one by one.
      const oldest = b.el.querySelector("[data-seq]");
      if (!oldest) {
        b.frames = 0;
        continue;
      }
      oldest.remove();
      b.frames--;
      this.frameCount--;
    }
    // Compact the block list now and then.
    if (this.first > 1024 && this.first * 2 > this.blocks.length) {
      this.blocks = this.blocks.slice(this.first);
      this.first = 0;
    }
  }
}
