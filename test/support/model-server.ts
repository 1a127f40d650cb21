/**
 * A scripted stand-in for the Anthropic Messages API, so the real Claude Code CLI runs offline
 * (ANTHROPIC_BASE_URL points here). It answers POST /v1/messages as the API does: streamed as
 * server-sent events (message_start, content_block_start, content_block_delta with text_delta or
 * input_json_delta, content_block_stop, message_delta with the stop_reason, message_stop) or as
 * one JSON message, and POST /v1/messages/count_tokens.
 *
 * The agent loop's requests (those that offer the Bash tool) get the script's turns in order:
 * turn n answers the request whose history holds n assistant messages, so a retried request gets
 * the same turn again. Any other request (a title, a summary of a command) gets a short text. A
 * turn may be a function of the request, to act (on the database, say) before answering.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptBlock =
  | { readonly type: 'text'; readonly text: string }
  | { readonly type: 'tool_use'; readonly name: string; readonly input: Record<string, unknown> };

export interface ModelRequest {
  readonly model: string;
  readonly stream: boolean;
  readonly messages: readonly { role: string; content: unknown }[];
  readonly tools?: readonly { name: string }[];
  readonly system?: unknown;
}

export type Turn =
  readonly ScriptBlock[] | ((request: ModelRequest) => ScriptBlock[] | Promise<ScriptBlock[]>);

export interface ModelServer {
  readonly url: string;
  /** The agent loop's requests, in order. */
  readonly requests: ModelRequest[];
  /** Every path that was asked for, in order (to see what the CLI calls). */
  readonly paths: string[];
  close(): Promise<void>;
}

const usage = {
  input_tokens: 10,
  output_tokens: 5,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

/** Everything the user side said in a request's last message, as text: tool results and context. */
export function lastUserText(request: ModelRequest): string {
  const last = request.messages[request.messages.length - 1];
  return contentText(last?.content);
}

/** All user-side text of a request, first message included (where SessionStart context lands). */
export function allUserText(request: ModelRequest): string {
  return request.messages
    .filter((m) => m.role === 'user')
    .map((m) => contentText(m.content))
    .join('\n');
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((b: { type?: string; text?: string; content?: unknown; is_error?: boolean }) =>
      b.type === 'tool_result'
        ? `${b.is_error === true ? '[error] ' : ''}${contentText(b.content)}`
        : (b.text ?? ''),
    )
    .join('\n');
}

export async function startModelServer(script: readonly Turn[]): Promise<ModelServer> {
  const requests: ModelRequest[] = [];
  const paths: string[] = [];
  let messageCount = 0;
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'api_error', message: String(error) } }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = (req.url ?? '').split('?')[0] ?? '';
    paths.push(`${req.method ?? '?'} ${path}`);
    if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
      return json(res, { input_tokens: 10 });
    }
    if (req.method !== 'POST' || path !== '/v1/messages') {
      return json(res, { type: 'error', error: { type: 'not_found_error', message: path } }, 404);
    }
    const request = JSON.parse(body) as ModelRequest;
    const isLoop = (request.tools ?? []).some((t) => t.name === 'Bash');
    let blocks: readonly ScriptBlock[] = [{ type: 'text', text: 'ok' }];
    if (isLoop) {
      requests.push(request);
      const turn = script[request.messages.filter((m) => m.role === 'assistant').length];
      blocks =
        turn === undefined
          ? [{ type: 'text', text: 'done' }]
          : typeof turn === 'function'
            ? await turn(request)
            : turn;
    }
    messageCount += 1;
    const id = `msg_scripted_${messageCount}`;
    if (request.stream) stream(res, id, request.model, blocks);
    else json(res, message(id, request.model, blocks));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    paths,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

function json(res: ServerResponse, value: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_scripted' });
  res.end(JSON.stringify(value));
}

let toolIds = 0;
const toolUseId = (): string => `toolu_scripted_${++toolIds}`;
const stopReason = (blocks: readonly ScriptBlock[]) =>
  blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn';

function message(id: string, model: string, blocks: readonly ScriptBlock[]) {
  const content = blocks.map((b) =>
    b.type === 'text' ? b : { type: 'tool_use', id: toolUseId(), name: b.name, input: b.input },
  );
  return {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: stopReason(blocks),
    stop_sequence: null,
    usage,
  };
}

function stream(res: ServerResponse, id: string, model: string, blocks: readonly ScriptBlock[]): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'request-id': 'req_scripted',
  });
  const event = (type: string, data: Record<string, unknown>): void => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  const start = {
    id,
    type: 'message',
    role: 'assistant',
    model,
    content: [],
    stop_reason: null,
    stop_sequence: null,
  };
  event('message_start', { message: { ...start, usage: { ...usage, output_tokens: 1 } } });
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      event('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } });
    } else {
      const block = { type: 'tool_use', id: toolUseId(), name: b.name, input: {} };
      event('content_block_start', { index, content_block: block });
      const partial = JSON.stringify(b.input);
      // Sent in two pieces, as the API streams a tool's input.
      const cut = Math.floor(partial.length / 2);
      event('content_block_delta', {
        index,
        delta: { type: 'input_json_delta', partial_json: partial.slice(0, cut) },
      });
      event('content_block_delta', {
        index,
        delta: { type: 'input_json_delta', partial_json: partial.slice(cut) },
      });
    }
    event('content_block_stop', { index });
  });
  event('message_delta', {
    delta: { stop_reason: stopReason(blocks), stop_sequence: null },
    usage: { output_tokens: 5 },
  });
  event('message_stop', {});
  res.end();
}
