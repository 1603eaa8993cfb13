// The observation pane: frames in, DOM out.
//
// Every frame becomes exactly one element carrying data-seq and data-type,
// placed in a block: streamed thinking and assistant text join the
// paragraph of their message, a tool call's updates join the call's block,
// a plan is a checklist, asks and permission waits are highlighted, a state
// change is a badge.  Text is only ever set with textContent: a frame is
// untrusted input and never becomes markup.
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

const PLAN_MARK: Record<number, string> = {
  [AgentPlanEntryStatus.UNSPECIFIED]: "[ ]",
  [AgentPlanEntryStatus.PENDING]: "[ ]",
  [AgentPlanEntryStatus.IN_PROGRESS]: "[~]",
  [AgentPlanEntryStatus.COMPLETED]: "[x]",
};

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
}

export class PaneView {
  private queue: Queued[] = [];
  private blocks: Block[] = [];
  private first = 0; // index of the oldest live block in blocks
  private byKey = new Map<string, Block>();
  private frameCount = 0;
  private scheduled = false;
  private dropped = 0;
  onRendered: (() => void) | null = null;

  constructor(
    private root: HTMLElement,
    private cap: number,
  ) {}

  /* Empties the pane (a new session). */
  reset(): void {
    this.queue = [];
    this.blocks = [];
    this.first = 0;
    this.byKey.clear();
    this.frameCount = 0;
    this.dropped = 0;
    this.state = AgentSessionState.UNSPECIFIED;
    this.root.replaceChildren();
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
    this.scrollToEnd();
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
    this.trim();
    this.scrollToEnd();
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

  private render(frame: AgentSessionFrame, log: string): void {
    this.log = log;
    const type = frameType(frame);
    const ev = frame.event?.event;
    if (frame.state !== AgentSessionState.UNSPECIFIED) this.state = frame.state;
    // A permission wait: the frame that blocks, and what comes while blocked.
    const blocked = this.state === AgentSessionState.BLOCKED;
    switch (ev?.case) {
      case "thinking":
      case "assistantText": {
        const id = ev.value.messageId;
        const key = `${ev.case}:${id}`;
        let b = this.last();
        if (!b || b.key !== key) {
          b = { el: el("p", ev.case === "thinking" ? "thinking" : "assistant"), key, frames: 0 };
          if (id) b.el.dataset.messageId = id;
          this.addBlock(b);
        }
        const span = this.frameEl("span", "chunk", frame, type);
        span.textContent = ev.value.text;
        b.el.appendChild(span);
        b.frames++;
        return;
      }
      case "toolCall":
      case "toolCallUpdate": {
        const id = ev.value.toolCallId;
        let b = id ? this.byKey.get("tool:" + id) : undefined;
        if (!b) {
          b = { el: el("div", "tool"), key: id ? "tool:" + id : "", frames: 0 };
          b.el.dataset.toolCallId = id;
          b.el.appendChild(el("span", "tool-status"));
          b.el.appendChild(el("span", "tool-title", id));
          this.addBlock(b);
        }
        const status = TOOL_STATUS[ev.value.status] ?? "";
        if (status) {
          (b.el.firstChild as HTMLElement).textContent = status;
          b.el.dataset.status = status;
        }
        if (ev.case === "toolCall") {
          (b.el.children[1] as HTMLElement).textContent = ev.value.title || id;
          const e = this.frameEl("span", "tool-start", frame, type);
          b.el.appendChild(e);
        } else {
          const e = this.frameEl("pre", "tool-output", frame, type);
          e.textContent = ev.value.output;
          b.el.appendChild(e);
        }
        b.frames++;
        return;
      }
      case "plan": {
        for (const old of this.root.querySelectorAll(".plan.current")) old.classList.remove("current");
        const e = this.frameEl("ul", "plan current", frame, type);
        for (const entry of ev.value.entries) {
          const li = el("li", "plan-" + (PLAN_MARK[entry.status] === "[x]" ? "done" : "open"));
          li.appendChild(el("span", "mark", PLAN_MARK[entry.status] ?? "[ ]"));
          li.appendChild(el("span", "", " " + entry.content));
          e.appendChild(li);
        }
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
        e.appendChild(el("span", "record-type", ev.value.type));
        e.appendChild(el("code", "record-data", " " + ev.value.dataJson));
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

  /* Drops the oldest frame elements until at most cap are left. */
  private trim(): void {
    while (this.frameCount > this.cap && this.first < this.blocks.length) {
      const b = this.blocks[this.first];
      if (b.frames > 0 && b.frames <= this.frameCount - this.cap) {
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
