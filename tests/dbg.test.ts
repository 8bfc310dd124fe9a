import { it } from 'vitest';
import { fakeUpstream, startProxy } from './support/harness.js';
it('x', async () => {
  const up = await fakeUpstream((req, res) => { setTimeout(() => { res.writeHead(200, {'content-type':'application/json'}); res.end('{"choices":[]}'); }, 1000); });
  const proxy = await startProxy({ TOOLPROOF_UPSTREAM_URL: up.url, TOOLPROOF_STREAM_KEEPALIVE_MS: '40' }, { admission: { concurrency: 1, queueSize: 2, queueTimeoutMs: 4000 }, defaults: { forceToolUse: false } } as never);
  const p = fetch(`${proxy.origin}/v1/chat/completions`, { method: 'POST', headers: {'content-type':'application/json'}, body: JSON.stringify({model:'m1', messages:[{role:'user',content:'hold'}]})});
  await new Promise(r => setTimeout(r, 100));
  const t0 = Date.now();
  const q = await fetch(`${proxy.origin}/v1/chat/completions`, { method: 'POST', headers: {'content-type':'application/json'}, body: JSON.stringify({model:'m1', stream: true, messages:[{role:'user',content:'q'}]})});
  console.log('HEADERS after', Date.now() - t0, q.status);
  const reader = q.body!.getReader();
  const { value } = await reader.read();
  console.log('FIRST after', Date.now() - t0, new TextDecoder().decode(value));
  const c = proxy.app.toolproof.upstreams.all();
  console.log('clients', c.length, JSON.stringify(c.map(x => x.admissionLoad())));
  await p;
  await proxy.close(); await up.close();
});
