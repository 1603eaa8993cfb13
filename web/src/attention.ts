// Attention: the tab's title counts the sessions that need the user, the
// favicon gets a badge while any do, and, once the user has allowed it, a
// browser notification names each session that enters Needs you: one per
// transition, none for a session that already needed the user when the page
// loaded.  Leaving Needs you takes its notification away.
//
// The badge is a second icon file of the page's own (the CSP allows nothing
// but the page's origin, so no data: or blob: URL).
import type { Session } from "./board";

const TITLE = "agenthub";
const ICON = "/favicon.svg";
const ICON_BADGE = "/favicon-alert.svg";

export class Attention {
  private shown = new Map<string, Notification>();
  private count = 0;

  constructor(
    private icon: HTMLLinkElement,
    private button: HTMLButtonElement,
  ) {
    button.addEventListener("click", () => void this.ask());
    this.renderButton();
  }

  private supported(): boolean {
    return typeof Notification !== "undefined";
  }

  private async ask(): Promise<void> {
    if (!this.supported()) return;
    try {
      await Notification.requestPermission();
    } finally {
      this.renderButton();
    }
  }

  private renderButton(): void {
    const p = this.supported() ? Notification.permission : "denied";
    this.button.hidden = p !== "default";
    document.documentElement.dataset.notifications = this.supported() ? p : "unsupported";
  }

  /* After a board render: the sessions that entered and left Needs you, and
   * how many are in it now. */
  update(entered: Session[], left: Session[], total: number): void {
    this.count = total;
    document.title = total > 0 ? `(${total}) ${TITLE}` : TITLE;
    const href = total > 0 ? ICON_BADGE : ICON;
    if (this.icon.getAttribute("href") !== href) this.icon.setAttribute("href", href);
    this.icon.dataset.badge = String(total > 0);
    for (const s of left) this.dismiss(s.id);
    this.renderButton();
    if (!this.supported() || Notification.permission !== "granted") return;
    for (const s of entered) {
      this.dismiss(s.id);
      try {
        const n = new Notification(`${s.id} needs you`, { body: s.reason || "waiting for permission", tag: s.id });
        n.onclick = () => {
          window.focus();
          location.hash = "#session=" + encodeURIComponent(s.id);
        };
        this.shown.set(s.id, n);
      } catch {
        // A browser that allows notifications only from a service worker.
      }
    }
  }

  private dismiss(id: string): void {
    const n = this.shown.get(id);
    if (!n) return;
    n.close();
    this.shown.delete(id);
  }

  reset(): void {
    for (const id of [...this.shown.keys()]) this.dismiss(id);
    this.update([], [], 0);
  }

  get needs(): number {
    return this.count;
  }
}
