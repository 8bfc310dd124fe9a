import type { Connections } from './connections.js';
import type { Policy } from '../policies/types.js';
import type { PolicyEffect } from '../policies/registry.js';
import type { ChatCall, ChatDeps } from './chat/context.js';
import type { Config } from './config.js';
import type { FallbackMemory } from './fallback-memory.js';
import type { KeyLimiter } from './keys.js';
import type { KeyWaits } from './key-waits.js';
import type { Metrics } from './metrics.js';
import type { OpenStreams } from './open-streams.js';
import type { ServedModelLabels } from './routing.js';
import type { Upstreams } from './upstream.js';
import type { Tracing } from './tracing/types.js';
import type { CaptureRing } from './capture/ring.js';
import type { ResponsesItemStore } from './front-doors/responses/item-store.js';
import type { WorkerRelay } from './worker-relay.js';

/** What the routes share: built once by buildApp. */
export interface AppState {
  config: Config;
  metrics: Metrics;
  upstreams: Upstreams;
  memory: FallbackMemory;
  policies: readonly Policy<PolicyEffect>[];
  chatDeps: ChatDeps;
  modelLabels: ServedModelLabels;
  /** Streams open now (ended with an error event at the shutdown deadline). */
  openStreams: OpenStreams;
  /** Client connections (a shutdown cuts those that never carried a byte). */
  connections: Connections;
  /** OpenTelemetry tracing (server/tracing/); undefined when off, and then nothing of it is loaded. */
  tracing?: Tracing<ChatCall>;
  /** Each client key's counters (requests, tokens, in flight), kept across reloads. */
  /** Per process, or the group's with TOOLPROOF_WORKERS > 1 (group-admission.ts). */
  keyLimits: KeyLimiter;
  /** Requests of a key waiting for an upstream slot: a reload that revokes the key refuses them. */
  keyWaits: KeyWaits;
  /** The capture ring behind /inspect; absent when capture is off (TOOLPROOF_CAPTURE_MB=0). */
  capture?: CaptureRing;
  /** The Responses output items kept for item_reference; absent when off (TOOLPROOF_RESPONSES_STORE_MB=0). */
  responsesStore?: ResponsesItemStore;
  /** In a worker of TOOLPROOF_WORKERS > 1: carries a request to the worker that holds its state (worker-relay.ts). */
  relay?: WorkerRelay;
}
