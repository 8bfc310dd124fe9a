/**
 * The waiting requests of one admission gate (admission.ts), in the order they take a slot: by
 * priority class; within a class, the owner (a key, else a client address) with the fewest
 * requests in flight on the replica per unit of its weight; then the owner that has been served
 * the least work (its virtual time: each request it had admitted charged its prompt's size, and
 * the tokens it generated, over its weight, admission.ts); then arrival. One agent that sends 40 sub-agent requests at once no
 * longer makes another owner's single turn wait behind all 40: that turn's owner has nothing in
 * flight, so it goes next; and an agent of 90 KB prompts no longer takes every other turn from
 * one of 2 KB prompts on a busy slot.
 *
 * Every operation is O(log n) whatever the queue holds (a hostile client may fill it): per class,
 * each owner's waiting requests are a lane (a list by arrival), and the lanes sit in two indexed
 * binary heaps, one by fair share (for the next admission), one by the owner's use of the replica
 * (for the shedding rule's victim). An owner whose count in flight changes moves in the heaps of
 * its lanes (at most one per class); a request that leaves from the middle (its client gone, its
 * timeout) unlinks in O(1) and moves its lane at most once per heap.
 */

/** A client's share of one replica: what it holds and waits for there. */
export interface OwnerState {
  readonly id: string;
  /** A named key: the shedding rule applies between such owners (docs/operations.md). */
  readonly named: boolean;
  /** Its share against other owners' (a key's `weight`; 1 otherwise). */
  weight: number;
  /** Requests holding a slot of the replica. */
  inflight: number;
  /** Requests in this queue, every class. */
  queued: number;
  /**
   * Its virtual time: the prompt and decode it has been served, over its weight, from the gate's clock when it
   * came (admission.ts). Between equal shares the smallest goes first.
   */
  served: number;
  /** Its lane per class (undefined: none of its requests waits in that class). */
  readonly lanes: Array<Lane | undefined>;
}

/** A request in the queue; the links are the queue's own. */
export interface QueueNode {
  readonly rank: number;
  /** Arrival order (unique, increasing). */
  readonly seq: number;
  readonly owner: OwnerState;
  /** Its owner's lane of its class, by arrival. */
  prev: QueueNode | undefined;
  next: QueueNode | undefined;
  /** Its class, by arrival (for the newest of a class). */
  older: QueueNode | undefined;
  newer: QueueNode | undefined;
  inQueue: boolean;
}

interface Lane {
  readonly owner: OwnerState;
  readonly rank: number;
  head: QueueNode;
  tail: QueueNode;
  /** Its index in its class's heaps, [fair, busy] (-1: not there). */
  readonly at: [number, number];
}

interface ClassQueue {
  /** Lanes by fair share: fewest in flight per weight, then the oldest head. */
  readonly fair: LaneHeap;
  /** Named owners' lanes by use of the replica (in flight + queued), most first, then the newest tail. */
  readonly busy: LaneHeap;
  oldest: QueueNode | undefined;
  newest: QueueNode | undefined;
  size: number;
}

export function newOwner(
  id: string,
  named: boolean,
  weight: number,
  classes: number,
  served = 0,
): OwnerState {
  return {
    id,
    named,
    weight,
    inflight: 0,
    queued: 0,
    served,
    lanes: new Array(classes).fill(undefined),
  };
}

/** a's share of the replica is smaller than b's (in flight per weight, compared without division). */
function lessShare(a: OwnerState, b: OwnerState): number {
  return a.inflight * b.weight - b.inflight * a.weight;
}

const usage = (o: OwnerState): number => o.inflight + o.queued;

/**
 * Equal shares: the owner served the least (virtual time), then the oldest head. By the oldest
 * head alone, an agent that keeps requests queued won every tie against one that sends its turns
 * one after another (whose next turn arrives only once its last has ended): with two slots, four
 * loops of one key against one loop each of two others took 2.2 times their share. By the owner
 * served longest ago (round robin), a 90 KB prompt and a 2 KB one took turns on a busy slot.
 */
const fairFirst = (a: Lane, b: Lane): boolean => {
  const d = lessShare(a.owner, b.owner);
  if (d !== 0) return d < 0;
  const t = a.owner.served - b.owner.served;
  return t < 0 || (t === 0 && a.head.seq < b.head.seq);
};

const busyFirst = (a: Lane, b: Lane): boolean => {
  const d = usage(a.owner) - usage(b.owner);
  return d > 0 || (d === 0 && a.tail.seq > b.tail.seq);
};

/** A binary heap of lanes that knows where each lane is (`at[slot]`): remove and update in O(log n). */
class LaneHeap {
  private readonly items: Lane[] = [];
  constructor(
    private readonly first: (a: Lane, b: Lane) => boolean,
    private readonly slot: 0 | 1,
  ) {}

  get size(): number {
    return this.items.length;
  }

  peek(): Lane | undefined {
    return this.items[0];
  }

  push(l: Lane): void {
    l.at[this.slot] = this.items.length;
    this.items.push(l);
    this.up(l.at[this.slot]);
  }

  remove(l: Lane): void {
    const i = l.at[this.slot];
    if (i < 0) return;
    const last = this.items.pop()!;
    l.at[this.slot] = -1;
    if (last === l) return;
    this.items[i] = last;
    last.at[this.slot] = i;
    this.update(last);
  }

  /** `l`'s key changed: it moves up or down to its place. */
  update(l: Lane): void {
    const i = l.at[this.slot];
    if (i < 0) return;
    this.down(this.up(i));
  }

  private up(i: number): number {
    const items = this.items;
    const l = items[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p]!;
      if (!this.first(l, parent)) break;
      items[i] = parent;
      parent.at[this.slot] = i;
      i = p;
    }
    items[i] = l;
    l.at[this.slot] = i;
    return i;
  }

  private down(i: number): void {
    const items = this.items;
    const n = items.length;
    const l = items[i]!;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && this.first(items[c + 1]!, items[c]!)) c++;
      const child = items[c]!;
      if (!this.first(child, l)) break;
      items[i] = child;
      child.at[this.slot] = i;
      i = c;
    }
    items[i] = l;
    l.at[this.slot] = i;
  }
}

export class FairQueue<T extends QueueNode> {
  private readonly classes: ClassQueue[];
  private count = 0;

  constructor(classes: number) {
    this.classes = Array.from({ length: classes }, () => ({
      fair: new LaneHeap(fairFirst, 0),
      busy: new LaneHeap(busyFirst, 1),
      oldest: undefined,
      newest: undefined,
      size: 0,
    }));
  }

  get size(): number {
    return this.count;
  }

  /** The most urgent class with a request waiting (Infinity: none). */
  firstRank(): number {
    for (let r = 0; r < this.classes.length; r++) if (this.classes[r]!.size > 0) return r;
    return Number.POSITIVE_INFINITY;
  }

  /** The request that takes the next slot. */
  first(): T | undefined {
    for (const c of this.classes) if (c.size > 0) return c.fair.peek()!.head as T;
    return undefined;
  }

  /** The newest request of the least urgent class that has one. */
  newestOfLast(): T | undefined {
    for (let r = this.classes.length - 1; r >= 0; r--) {
      const c = this.classes[r]!;
      if (c.size > 0) return c.newest as T;
    }
    return undefined;
  }

  /**
   * The shedding rule's victim in class `rank` for a newcomer of `owner`: the newest request of
   * the named owner using the most of the replica, when that is at least two more than `owner`.
   */
  busiest(rank: number, owner: OwnerState): T | undefined {
    const top = this.classes[rank]!.busy.peek();
    return top !== undefined && usage(top.owner) > usage(owner) + 1 ? (top.tail as T) : undefined;
  }

  push(n: T): void {
    const c = this.classes[n.rank]!;
    const o = n.owner;
    n.inQueue = true;
    n.prev = undefined;
    n.next = undefined;
    n.newer = undefined;
    n.older = c.newest;
    if (c.newest) c.newest.newer = n;
    else c.oldest = n;
    c.newest = n;
    c.size++;
    this.count++;
    o.queued++;
    const lane = o.lanes[n.rank];
    if (lane === undefined) {
      const fresh: Lane = { owner: o, rank: n.rank, head: n, tail: n, at: [-1, -1] };
      o.lanes[n.rank] = fresh;
      c.fair.push(fresh);
      if (o.named) c.busy.push(fresh);
    } else {
      n.prev = lane.tail;
      lane.tail.next = n;
      lane.tail = n;
    }
    this.moved(o);
  }

  /** Takes `n` out (false: it was not in). */
  remove(n: T): boolean {
    if (!n.inQueue) return false;
    n.inQueue = false;
    const c = this.classes[n.rank]!;
    const o = n.owner;
    if (n.older) n.older.newer = n.newer;
    else c.oldest = n.newer;
    if (n.newer) n.newer.older = n.older;
    else c.newest = n.older;
    c.size--;
    this.count--;
    o.queued--;
    const lane = o.lanes[n.rank]!;
    if (n.prev) n.prev.next = n.next;
    else if (n.next) lane.head = n.next;
    if (n.next) n.next.prev = n.prev;
    else if (n.prev) lane.tail = n.prev;
    n.prev = n.next = n.older = n.newer = undefined;
    if (lane.head === n && lane.tail === n) {
      o.lanes[n.rank] = undefined;
      c.fair.remove(lane);
      c.busy.remove(lane);
    }
    this.moved(o);
    return true;
  }

  /**
   * The owner's counts or weight changed: its lanes move to their places (in flight moves the
   * fair order; in flight and queued, the use that the shedding rule reads).
   */
  moved(o: OwnerState): void {
    for (let r = 0; r < o.lanes.length; r++) {
      const lane = o.lanes[r];
      if (lane === undefined) continue;
      const c = this.classes[r]!;
      c.fair.update(lane);
      c.busy.update(lane);
    }
  }
}
