/**
 * A cache of at most `max` entries that forgets the least recently used one when full: the one
 * bounded cache behind the per-process caches (the ingress's hook settings, the executor's checked
 * definitions, the mail receiver's routes, the stores' hook rows), so a burst of distinct keys
 * never grows memory and never throws the hot entries away all at once.
 *
 * A Map keeps insertion order, so the first key is the least recently used; a hit moves its key to
 * the end, except when it already is the newest (the common case on a hot path: the same applet
 * again), which costs one comparison.
 */
export class Lru<K, V> {
  readonly max: number;
  #entries = new Map<K, V>();
  #newest: K | undefined;

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`Lru: max must be a whole number of at least 1, got ${max}`);
    this.max = max;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined || key === this.#newest) return value;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    this.#newest = key;
    return value;
  }

  set(key: K, value: V): this {
    if (this.#entries.has(key)) this.#entries.delete(key);
    else if (this.#entries.size >= this.max) {
      const oldest = this.#entries.keys().next().value as K;
      this.#entries.delete(oldest);
    }
    this.#entries.set(key, value);
    this.#newest = key;
    return this;
  }

  delete(key: K): boolean {
    if (key === this.#newest) this.#newest = undefined;
    return this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
    this.#newest = undefined;
  }
}
