/**
 * The front doors toolproof serves, in registration order (buildApp registers each with
 * registerFrontDoor). Adding an API: its folder here, and one line in this table.
 */
import { chat } from './chat/index.js';
import { messages } from './messages/index.js';
import { responsesCompact } from './responses/compact.js';
import { responses } from './responses/index.js';

export const FRONT_DOORS = [chat, messages, responses, responsesCompact] as const;

/** A front door's name: the `api` label of the metrics and the log line. */
export type FrontDoorApi = (typeof FRONT_DOORS)[number]['api'];
