/**
 * A worker's channel to the cluster primary in one process (server/group-admission.ts): the
 * worker's side (GroupChannel) and the primary's (groupAdmissionPrimary) talk as they do over
 * node:cluster's IPC, every message through JSON and delivered on a later turn of the event loop.
 * `toPrimary` and `toWorker` hold what each side sent.
 */
import { GroupChannel, groupAdmissionPrimary, type WorkerPeer } from '../../server/group-admission.js';

const wire = (m: unknown): unknown => JSON.parse(JSON.stringify(m));

export function inProcessGroup(): { ch: GroupChannel; toPrimary: unknown[]; toWorker: unknown[] } {
  const toPrimary: unknown[] = [];
  const toWorker: unknown[] = [];
  let ch: GroupChannel;
  const worker: WorkerPeer = {
    id: 1,
    isConnected: () => true,
    send(m) {
      toWorker.push(m);
      setImmediate(() => ch.receive(wire(m)));
    },
  };
  const primary = groupAdmissionPrimary((id) => (id === 1 ? worker : undefined));
  ch = new GroupChannel((m) => {
    toPrimary.push(m);
    setImmediate(() => primary.receive(worker, wire(m)));
  });
  return { ch: ch!, toPrimary, toWorker };
}

/** One turn of the event loop (a message's delivery). */
export const turn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
