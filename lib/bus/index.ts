import { EventEmitter } from "node:events";
import type { HealthBanner } from "../health";

/** What the SSE stream carries (spec "GET /stream"). */
export interface RunEvent {
  type: "run.queued" | "run.updated";
  run_id: string;
  applet_id: string;
  status: string;
}

export interface BusMessage extends RunEvent {
  /** Monotonic per process; the SSE `id:` so a client can resume with Last-Event-ID. */
  seq: number;
}

/** Runs whose last published version is remembered (more than a burst's worth between two looks of the feed). */
const MAX_VERSIONS = 20_000;

/**
 * The in-memory event bus of the web process. It keeps the last `keep` messages so a reconnecting
 * client that sends Last-Event-ID gets what it missed, if it is still here.
 */
export class Bus {
  #emitter = new EventEmitter();
  #seq = 0;
  #recent: BusMessage[] = [];
  #health: HealthBanner | null = null;
  #versions = new Map<string, string>();
  #olderVersions = new Map<string, string>();

  constructor(private readonly keep = 1000) {
    this.#emitter.setMaxListeners(0);
  }

  /**
   * `version`: the run row's updated_at as this publisher knows it. A message for a run at the
   * version already published is dropped (null): the change feed (lib/bus/poll.ts) does not
   * announce again a new run the ingress announced as it stored it (a stream got run.queued and
   * then run.updated with status queued for every webhook), nor the ingress one the feed read
   * first (a look between the commit and the ingress's announcement: about 1 run in 100 under
   * load, which a stream then sees as run.updated with status queued). One message per change.
   */
  publish(event: RunEvent, version?: string): BusMessage | null {
    if (version !== undefined) {
      if ((this.#versions.get(event.run_id) ?? this.#olderVersions.get(event.run_id)) === version) return null;
      this.#versions.set(event.run_id, version);
      // Two generations instead of evicting the oldest entry one at a time: deleting from the head
      // of a Map and reading its first key again cost ~20 µs per webhook once it was full.
      if (this.#versions.size >= MAX_VERSIONS / 2) {
        this.#olderVersions = this.#versions;
        this.#versions = new Map();
      }
    }
    const msg = { ...event, seq: ++this.#seq };
    // A ring: message n lives at n % keep, so publishing never shifts the array.
    this.#recent[msg.seq % this.keep] = msg;
    if (this.#emitter.listenerCount("message") > 0) this.#emitter.emit("message", msg);
    return msg;
  }

  /** Whether anyone (an open SSE stream) is listening now. */
  hasSubscribers(): boolean {
    return this.#emitter.listenerCount("message") > 0;
  }

  subscribe(fn: (msg: BusMessage) => void): () => void {
    this.#emitter.on("message", fn);
    this.#emitter.emit("subscribed", this.#emitter.listenerCount("message"));
    return () => this.#emitter.off("message", fn);
  }

  /** Called with the number of subscribers each time one subscribes (lib/bus/live.ts). */
  onSubscribe(fn: (subscribers: number) => void): () => void {
    this.#emitter.on("subscribed", fn);
    return () => this.#emitter.off("subscribed", fn);
  }

  /**
   * The health banner (lib/bus/health watches it): the latest one is kept, so a stream opened
   * later starts with it, and each change goes to every open stream as a `health` event.
   */
  publishHealth(banner: HealthBanner): void {
    this.#health = banner;
    this.#emitter.emit("health", banner);
  }

  /** The latest banner published; null before the first look. */
  health(): HealthBanner | null {
    return this.#health;
  }

  subscribeHealth(fn: (banner: HealthBanner) => void): () => void {
    this.#emitter.on("health", fn);
    return () => this.#emitter.off("health", fn);
  }

  /** Messages after `seq`, oldest first (for Last-Event-ID). */
  since(seq: number): BusMessage[] {
    const out: BusMessage[] = [];
    for (let n = Math.max(seq + 1, this.#seq - this.keep + 1); n <= this.#seq; n++) {
      const m = this.#recent[n % this.keep];
      if (m?.seq === n) out.push(m);
    }
    return out;
  }
}
