import { EventEmitter } from "node:events";

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

/**
 * The in-memory event bus of the web process. It keeps the last `keep` messages so a reconnecting
 * client that sends Last-Event-ID gets what it missed, if it is still here.
 */
export class Bus {
  #emitter = new EventEmitter();
  #seq = 0;
  #recent: BusMessage[] = [];

  constructor(private readonly keep = 1000) {
    this.#emitter.setMaxListeners(0);
  }

  publish(event: RunEvent): BusMessage {
    const msg = { ...event, seq: ++this.#seq };
    this.#recent.push(msg);
    if (this.#recent.length > this.keep) this.#recent.splice(0, this.#recent.length - this.keep);
    this.#emitter.emit("message", msg);
    return msg;
  }

  subscribe(fn: (msg: BusMessage) => void): () => void {
    this.#emitter.on("message", fn);
    return () => this.#emitter.off("message", fn);
  }

  /** Messages after `seq`, oldest first (for Last-Event-ID). */
  since(seq: number): BusMessage[] {
    return this.#recent.filter((m) => m.seq > seq);
  }
}
