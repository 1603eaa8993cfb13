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
  private drawn = false;
  /* Notification.permission as last read: reading it is slow in Chromium
   * (it stood out in profiles of a thousand busy sessions), too slow for
   * every render batch.  Read again when the user answers the button. */
  private permission: string = "default";

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
    this.permission = p;
    if (this.button.hidden !== (p !== "default")) this.button.hidden = p !== "default";
    // Written only when it changes: an attribute of the root element makes
    // the browser look at the style of the whole page again.
    const said = this.supported() ? p : "unsupported";
    const root = document.documentElement;
    if (root.dataset.notifications !== said) root.dataset.notifications = said;
  }

  /* After a board render: the sessions that entered and left Needs you, and
   * how many are in it now. */
  update(entered: Session[], left: Session[], total: number): void {
    for (const s of left) this.dismiss(s.id);
    if (total !== this.count || !this.drawn) this.draw(total);
    if (entered.length === 0 || this.permission !== "granted") return;
    for (const s of entered) this.notify(s);
  }

  /* The title and the favicon for TOTAL sessions in Needs you.  Written
   * only when the count changes: the page's render batches come many a
   * second when many sessions change. */
  private draw(total: number): void {
    this.drawn = true;
    this.count = total;
    const title = total > 0 ? `(${total}) ${TITLE}` : TITLE;
    if (document.title !== title) document.title = title;
    const href = total > 0 ? ICON_BADGE : ICON;
    if (this.icon.getAttribute("href") !== href) this.icon.setAttribute("href", href);
    if (this.icon.dataset.badge !== String(total > 0)) this.icon.dataset.badge = String(total > 0);
  }

  private notify(s: Session): void {
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

  private dismiss(id: string): void {
    const n = this.shown.get(id);
    if (!n) return;
    n.close();
    this.shown.delete(id);
  }

  reset(): void {
    for (const id of [...this.shown.keys()]) this.dismiss(id);
    this.draw(0);
  }

  get needs(): number {
    return this.count;
  }
}
