/**
 * A cache of at most `max` entries that forgets the least recently used one when full: the one
 * bounded cache behind the per-process caches (the ingress's hook settings, the executor's checked
 * definitions, the mail receiver's routes, the stores' hook rows, parsed templates, decrypted
 * secrets), so a burst of distinct keys
 * never grows memory and never throws the hot entries away all at once.
 *
 * A Map from key to node plus a doubly linked list in order of use, newest first. Not a Map's own
 * insertion order: evicting its first key again and again makes `keys().next()` walk over every
 * deleted slot until the table is rebuilt (tens of µs per call once full, measured), where
 * unlinking the list's tail is a few pointer writes.
 */
interface Node<K, V> {
  key: K;
  value: V;
  newer: Node<K, V> | null;
  older: Node<K, V> | null;
}

export class Lru<K, V> {
  readonly max: number;
  #nodes = new Map<K, Node<K, V>>();
  #newest: Node<K, V> | null = null;
  #oldest: Node<K, V> | null = null;

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`Lru: max must be a whole number of at least 1, got ${max}`);
    this.max = max;
  }

  get size(): number {
    return this.#nodes.size;
  }

  get(key: K): V | undefined {
    const node = this.#nodes.get(key);
    if (node === undefined) return undefined;
    if (node !== this.#newest) {
      this.#unlink(node);
      this.#pushNewest(node);
    }
    return node.value;
  }

  set(key: K, value: V): this {
    const node = this.#nodes.get(key);
    if (node !== undefined) {
      node.value = value;
      if (node !== this.#newest) {
        this.#unlink(node);
        this.#pushNewest(node);
      }
      return this;
    }
    if (this.#nodes.size >= this.max && this.#oldest !== null) {
      const oldest = this.#oldest;
      this.#unlink(oldest);
      this.#nodes.delete(oldest.key);
    }
    const added: Node<K, V> = { key, value, newer: null, older: null };
    this.#nodes.set(key, added);
    this.#pushNewest(added);
    return this;
  }

  delete(key: K): boolean {
    const node = this.#nodes.get(key);
    if (node === undefined) return false;
    this.#unlink(node);
    return this.#nodes.delete(key);
  }

  clear(): void {
    this.#nodes.clear();
    this.#newest = null;
    this.#oldest = null;
  }

  #unlink(node: Node<K, V>): void {
    if (node.newer) node.newer.older = node.older;
    else this.#newest = node.older;
    if (node.older) node.older.newer = node.newer;
    else this.#oldest = node.newer;
    node.newer = null;
    node.older = null;
  }

  #pushNewest(node: Node<K, V>): void {
    node.older = this.#newest;
    node.newer = null;
    if (this.#newest) this.#newest.newer = node;
    this.#newest = node;
    if (this.#oldest === null) this.#oldest = node;
  }
}
