/**
 * Reads V8 heap snapshots (the .heapsnapshot JSON written by --heapsnapshot-signal or
 * v8.writeHeapSnapshot) and compares two taken from the same process: node ids stay stable across
 * snapshots of one process, so the objects of the second that the first lacks are the ones
 * allocated meanwhile and still alive. For bench/heap-streams.ts: with streams held open between
 * the two snapshots, those are what each open stream keeps.
 */
import { readFileSync } from 'node:fs';

interface RawSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface Snapshot {
  raw: RawSnapshot;
  nodeFieldCount: number;
  edgeFieldCount: number;
  /** Offset in raw.edges of each node's first edge, by node ordinal. */
  firstEdge: Uint32Array;
  totalSelfBytes: number;
}

export function readSnapshot(path: string): Snapshot {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as RawSnapshot;
  const nodeFieldCount = raw.snapshot.meta.node_fields.length;
  const edgeFieldCount = raw.snapshot.meta.edge_fields.length;
  const edgeCountAt = raw.snapshot.meta.node_fields.indexOf('edge_count');
  const selfSizeAt = raw.snapshot.meta.node_fields.indexOf('self_size');
  const count = raw.nodes.length / nodeFieldCount;
  const firstEdge = new Uint32Array(count + 1);
  let edge = 0;
  let total = 0;
  for (let i = 0; i < count; i++) {
    firstEdge[i] = edge;
    edge += (raw.nodes[i * nodeFieldCount + edgeCountAt] ?? 0) * edgeFieldCount;
    total += raw.nodes[i * nodeFieldCount + selfSizeAt] ?? 0;
  }
  firstEdge[count] = edge;
  return { raw, nodeFieldCount, edgeFieldCount, firstEdge, totalSelfBytes: total };
}

/** How DevTools' summary groups a node, roughly: its constructor, or a bucket for internals. */
function groupOf(type: string, name: string): string {
  switch (type) {
    case 'object':
      return name;
    case 'closure':
      return `${name || '(anonymous)'}()`;
    case 'array':
      return `(array${name ? ` ${name}` : ''})`;
    case 'string':
    case 'concatenated string':
    case 'sliced string':
      return '(string)';
    case 'code':
      return '(code)';
    case 'hidden':
    case 'object shape':
      return `(system${name ? ` ${name.slice(0, 40)}` : ''})`;
    case 'native':
      return `(native ${name.slice(0, 40)})`;
    default:
      return `(${type})`;
  }
}

export interface GroupDelta {
  group: string;
  count: number;
  bytes: number;
}

export interface SnapshotDiff {
  /** Self size of the objects the later snapshot has and the earlier lacks. */
  newBytes: number;
  totalBytesBefore: number;
  totalBytesAfter: number;
  byGroup: GroupDelta[];
  /** The same objects grouped as `group <- holder.edge` (their first strong retainer). */
  byRetainer: GroupDelta[];
}

/** The objects of `after` that `before` lacks, grouped by constructor and by what holds them. */
export function diffSnapshots(before: Snapshot, after: Snapshot): SnapshotDiff {
  const seen = new Set<number>();
  {
    const { raw, nodeFieldCount } = before;
    const idAt = raw.snapshot.meta.node_fields.indexOf('id');
    for (let i = idAt; i < raw.nodes.length; i += nodeFieldCount) seen.add(raw.nodes[i] ?? -1);
  }
  const { raw, nodeFieldCount, edgeFieldCount, firstEdge } = after;
  const f = raw.snapshot.meta.node_fields;
  const typeAt = f.indexOf('type');
  const nameAt = f.indexOf('name');
  const idAt = f.indexOf('id');
  const sizeAt = f.indexOf('self_size');
  const ef = raw.snapshot.meta.edge_fields;
  const eTypeAt = ef.indexOf('type');
  const eNameAt = ef.indexOf('name_or_index');
  const eToAt = ef.indexOf('to_node');
  const nodeTypes = raw.snapshot.meta.node_types[0];
  const edgeTypes = raw.snapshot.meta.edge_types[0];
  const count = raw.nodes.length / nodeFieldCount;

  const groupOfNode = (ordinal: number): string => {
    const base = ordinal * nodeFieldCount;
    const type = nodeTypes[raw.nodes[base + typeAt] ?? 0] ?? '?';
    return groupOf(type, raw.strings[raw.nodes[base + nameAt] ?? 0] ?? '');
  };

  const isNew = new Uint8Array(count);
  const groups = new Map<string, GroupDelta>();
  let newBytes = 0;
  for (let i = 0; i < count; i++) {
    const base = i * nodeFieldCount;
    if (seen.has(raw.nodes[base + idAt] ?? -1)) continue;
    const type = nodeTypes[raw.nodes[base + typeAt] ?? 0];
    if (type === 'synthetic') continue;
    isNew[i] = 1;
    const bytes = raw.nodes[base + sizeAt] ?? 0;
    newBytes += bytes;
    add(groups, groupOfNode(i), bytes);
  }

  // First strong retainer of each new node (edges are stored per holder, so one pass over all).
  const retainerOf = new Int32Array(count).fill(-1);
  const retainerEdge = new Int32Array(count).fill(-1);
  for (let holder = 0; holder < count; holder++) {
    for (let e = firstEdge[holder] ?? 0; e < (firstEdge[holder + 1] ?? 0); e += edgeFieldCount) {
      const to = (raw.edges[e + eToAt] ?? 0) / nodeFieldCount;
      if (!isNew[to] || retainerOf[to] !== -1) continue;
      const etype = edgeTypes[raw.edges[e + eTypeAt] ?? 0];
      if (etype === 'weak' || etype === 'shortcut') continue;
      retainerOf[to] = holder;
      retainerEdge[to] = e;
    }
  }
  const retained = new Map<string, GroupDelta>();
  for (let i = 0; i < count; i++) {
    if (!isNew[i]) continue;
    const holder = retainerOf[i] ?? -1;
    let via = '(no strong retainer)';
    if (holder >= 0) {
      const e = retainerEdge[i] ?? 0;
      const etype = edgeTypes[raw.edges[e + eTypeAt] ?? 0];
      const nameOrIndex = raw.edges[e + eNameAt] ?? 0;
      const edgeName =
        etype === 'element' || etype === 'hidden' ? `[${nameOrIndex}]` : (raw.strings[nameOrIndex] ?? '?');
      via = `${groupOfNode(holder)}${isNew[holder] ? '' : ' (old)'} .${edgeName.slice(0, 40)}`;
    }
    add(retained, `${groupOfNode(i)} <- ${via}`, raw.nodes[i * nodeFieldCount + sizeAt] ?? 0);
  }
  const sorted = (m: Map<string, GroupDelta>) => [...m.values()].sort((a, b) => b.bytes - a.bytes);
  return {
    newBytes,
    totalBytesBefore: before.totalSelfBytes,
    totalBytesAfter: after.totalSelfBytes,
    byGroup: sorted(groups),
    byRetainer: sorted(retained),
  };
}

function add(map: Map<string, GroupDelta>, group: string, bytes: number): void {
  const g = map.get(group);
  if (g) {
    g.count++;
    g.bytes += bytes;
  } else map.set(group, { group, count: 1, bytes });
}
