/**
 * Agents' real compaction requests, as chat completions (the shape each sends, its own words),
 * taken from the agent CLIs installed offline (../shared/agents/README.md, December 2026) unless
 * named otherwise. `conversation` stands for what the agent carries: earlier turns as messages
 * (`history`), or the conversation serialised into its one user turn.
 */
import type { ChatMessage } from '../../protocol/openai.js';

export interface AgentCompaction {
  /** The agent and where its words were read. */
  source: string;
  /** The request's messages for a conversation of `history` messages and `text` serialised. */
  messages: (history: ChatMessage[], text: string) => ChatMessage[];
  /** Whether it declares the session's tools (the rest send none). */
  tools?: boolean;
}

const tools = [
  {
    type: 'function' as const,
    function: { name: 'bash', parameters: { type: 'object', properties: { command: { type: 'string' } } } },
  },
];
export const sessionTools = tools;

export const AGENT_COMPACTIONS: AgentCompaction[] = [
  {
    source: 'opencode 1.18.33 (its compaction agent; Kilo CLI 7.7.7 the same words)',
    messages: (_history, text) => [
      {
        role: 'system',
        content:
          'You are a context summarization agent. You are given a conversation between a user and an agent. Your goal is to produce a structured summary matching the format specified so another coding agent can continue the work.',
      },
      {
        role: 'user',
        content: `Here is the conversation so far:\n\n<conversation>\n${text}\n</conversation>\n\nCreate a new anchored summary from the conversation history in the <conversation> tags above so another coding agent can continue the work.\n\nOutput exactly the Markdown structure shown inside <template> and keep the section order unchanged.`,
      },
    ],
  },
  {
    source: 'pi 0.73.1 (core/compaction/compaction.js generateSummary, utils.js SUMMARIZATION_SYSTEM_PROMPT)',
    messages: (_history, text) => [
      {
        role: 'system',
        content:
          'You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.\n\nDo NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary.',
      },
      {
        role: 'user',
        content: [
          {
            type: 'text',
            text: `<conversation>\n${text}\n</conversation>\n\nThe messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work.`,
          },
        ],
      },
    ],
  },
  {
    source: 'Cline 3.0.65 (its agentic compaction: the summarizer system prompt and request)',
    messages: (_history, text) => [
      {
        role: 'system',
        content:
          'Summarize the provided coding session into a concise continuation note with detailed next steps.',
      },
      {
        role: 'user',
        content: `Summarize this session for continuation. Be concise and factual.\n\n## Goal\nOne sentence: what is being built or fixed.\n\nConversation:\n${text}`,
      },
    ],
  },
  {
    source: 'Qwen Code 0.24.4 (chatCompressionService: getCompressionPrompt, COMPRESSION_REQUEST_DIRECTIVE)',
    messages: (history) => [
      {
        role: 'system',
        content:
          "You are the component that summarizes a conversation when its context window is about to overflow. The summary you produce will become the agent's ONLY memory of everything that happened before this point.",
      },
      ...history,
      {
        role: 'user',
        content: 'First, reason in your <analysis> block. Then, produce the <state_snapshot> XML.',
      },
    ],
  },
  {
    source:
      'Qwen Code 0.24.4 sharing the prompt cache (the session system prompt and tools, the directive last)',
    tools: true,
    messages: (history) => [
      { role: 'system', content: 'You are Qwen Code, an interactive CLI agent.' },
      ...history,
      {
        role: 'user',
        content:
          'You are the component that summarizes a conversation when its context window is about to overflow.\n\nDo not call tools; tool execution is disabled for this request. First, reason in your <analysis> block. Then, produce the <state_snapshot> XML.',
      },
    ],
  },
  {
    source: 'Gemini CLI (google-gemini/gemini-cli packages/core/src/core/prompts.ts getCompressionPrompt)',
    messages: (history) => [
      {
        role: 'system',
        content: 'You are the component that summarizes internal chat history into a given structure.',
      },
      ...history,
      { role: 'user', content: 'First, reason in your scratchpad. Then, generate the <state_snapshot>.' },
    ],
  },
  {
    source: 'Continue CLI 1.5.47 (compactChatHistory: the session tools are declared)',
    tools: true,
    messages: (history) => [
      { role: 'system', content: 'You are an agent in the Continue CLI.' },
      ...history,
      {
        role: 'user',
        content:
          'Please provide a concise summary of our conversation so far, capturing the key context, decisions made, and current state. Format this as a single comprehensive message that preserves all important information needed to continue our work.',
      },
    ],
  },
  {
    source: "Claude Code 2.1.332 (its compaction prompt: the session's tools declared, text only)",
    tools: true,
    messages: (history) => [
      { role: 'system', content: 'You are Claude Code.' },
      ...history,
      {
        role: 'user',
        content:
          'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is to create a detailed summary of the conversation so far.',
      },
    ],
  },
  {
    source: 'Codex 0.171.0 (codex-rs core/templates/compact/prompt.md: no tools)',
    messages: (history) => [
      ...history,
      {
        role: 'user',
        content:
          'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.',
      },
    ],
  },
];

/** Turns that are no compaction: over the window each stays the backend's refusal. */
export const NOT_COMPACTIONS: AgentCompaction[] = [
  {
    source: "a user's own request for a summary in a session with tools (opencode's main turn)",
    tools: true,
    messages: (history) => [
      { role: 'system', content: 'You are opencode, an interactive CLI tool.' },
      ...history,
      { role: 'user', content: 'Summarize what this conversation found, then fix the failing test.' },
    ],
  },
  {
    source: "opencode 1.18.33's title generator (no tools, names the conversation)",
    messages: (history) => [
      {
        role: 'system',
        content:
          'You are a title generator. You output ONLY a thread title. Nothing else.\n\nGenerate a brief title that would help the user find this conversation later.',
      },
      ...history,
      { role: 'user', content: 'Generate a title for this conversation.' },
    ],
  },
  {
    source: 'a chat without tools asking something else',
    messages: (history) => [
      { role: 'system', content: 'You are helpful.' },
      ...history,
      { role: 'user', content: 'And then?' },
    ],
  },
];
