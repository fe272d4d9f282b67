/**
 * When the editor's preview asks the server, without React: a changed request is sent once typing
 * pauses, a request made stale by a newer one is aborted (its late answer never lands), and the
 * pause does not repeat what "Preview" has just sent. usePreview wires it to component state;
 * tests drive it with fake timers.
 */
export interface PreviewRunner {
  /** The request changed: send it once `delayMs` pass without another change. */
  schedule: (body: string) => void;
  /** Send now ("Preview"). */
  now: (body: string) => void;
  /** Drop the pending send, if any (the request changed again, or stopped being followed). */
  unschedule: () => void;
  /** Abandon everything: the pending send and the request in flight. */
  cancel: () => void;
}

export interface PreviewRunnerOptions<A> {
  delayMs: number;
  /** Sends the request; resolves null when it was aborted. */
  request(body: string, signal: AbortSignal): Promise<A | null>;
  /** A request went out. */
  onStart: () => void;
  /** The latest request answered (answers of requests replaced by newer ones never come here). */
  onAnswer: (body: string, answer: A) => void;
}

export function createPreviewRunner<A>(opts: PreviewRunnerOptions<A>): PreviewRunner {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: AbortController | undefined;
  /** The body of the latest request sent. */
  let lastSent: string | undefined;

  async function send(body: string): Promise<void> {
    inFlight?.abort();
    const controller = new AbortController();
    inFlight = controller;
    lastSent = body;
    opts.onStart();
    const answer = await opts.request(body, controller.signal);
    // Aborted, or replaced while it was answering: the newer request is in charge.
    if (answer === null || inFlight !== controller) return;
    inFlight = undefined;
    opts.onAnswer(body, answer);
  }

  const unschedule = () => {
    clearTimeout(timer);
    timer = undefined;
  };

  return {
    schedule(body) {
      unschedule();
      timer = setTimeout(() => {
        timer = undefined;
        if (body !== lastSent) void send(body);
      }, opts.delayMs);
    },
    now(body) {
      unschedule();
      void send(body);
    },
    unschedule,
    cancel() {
      unschedule();
      inFlight?.abort();
      inFlight = undefined;
      lastSent = undefined;
    },
  };
}
