// tidepool against the official MCP TypeScript SDKs, over their own stdio
// transport and their Streamable HTTP one (--listen http://, the last block) (make sdk): @modelcontextprotocol/sdk 1.32.2 (the v1 client) and
// @modelcontextprotocol/client 2.4.0 (the v2 client) in every revision
// tidepool offers. Any rejection by an SDK (a result its schemas refuse,
// structuredContent that fails the tool's outputSchema) fails the test.
import assert from 'node:assert/strict';
import { describe, test, before, after } from 'node:test';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const BIN = process.env.TIDEPOOL ?? fileURLToPath(new URL('../../build/tidepool', import.meta.url));
const INFO = { name: 'tidepool-sdk-test', version: '1.0.0' };
const LEGACY = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
const MODERN = '2026-07-28';

// Each way in: the v1 client (it offers its latest, 2025-11-25), the v2 client
// offering one legacy revision, and the v2 client pinned to the stateless one.
const CLIENTS = [
  { name: 'sdk 1.32.2', rev: '2025-11-25', v1: true },
  ...LEGACY.map((rev) => ({ name: `client 2.4.0 ${rev}`, rev })),
  { name: `client 2.4.0 ${MODERN}`, rev: MODERN },
];

async function connect(c, args = []) {
  const params = { command: BIN, args, stderr: 'ignore' };
  if (c.v1) {
    const client = new ClientV1(INFO);
    const transport = new StdioV1(params);
    await client.connect(transport);
    return { client, transport };
  }
  const opts = c.rev === MODERN
    ? { versionNegotiation: { mode: { pin: MODERN } } }
    : { supportedProtocolVersions: [c.rev] };
  const client = new Client(INFO, opts);
  const transport = new StdioClientTransport(params);
  await client.connect(transport);
  return { client, transport };
}

// v1's callTool(params, resultSchema, options); v2's callTool(params, options).
const call = (c, client, params, options) =>
  c.v1 ? client.callTool(params, undefined, options) : client.callTool(params, options);

const text = (r) => r.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

for (const c of CLIENTS) {
  describe(c.name, () => {
    let client;
    before(async () => {
      ({ client } = await connect(c));
    });
    after(async () => {
      await client?.close();
    });

    test('connects in its revision', () => {
      if (!c.v1) assert.equal(client.getNegotiatedProtocolVersion(), c.rev);
      assert.equal(client.getServerVersion().name, 'tidepool');
      assert.match(client.getInstructions(), /^Call run_lua with Lua 5\.4 code/);
    });

    test('lists the tools, with annotations and output schemas', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['run_lua', 'run_python', 'list_sessions', 'close_session',
        'write_file', 'read_file', 'list_files']);
      const lua = tools[0];
      assert.deepEqual(lua.annotations, {
        readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false,
      });
      assert.equal(lua.outputSchema.type, 'object');
      assert.deepEqual(Object.keys(lua.inputSchema.properties).sort(), ['code', 'inputs', 'limits', 'seed', 'session']);
      assert.match(tools[1].description, /Only these modules can be imported: math, json, re, /);
    });

    test('calls both tools; the SDK checks structuredContent against outputSchema', async () => {
      await client.listTools(); // the SDK validates results against the schemas it listed
      const lua = await client.callTool({ name: 'run_lua', arguments: { code: 'return x * 2', inputs: { x: 21 } } });
      assert.equal(lua.isError, false);
      assert.equal(lua.structuredContent.value, 42);
      assert.equal(JSON.parse(text(lua)).value, 42);
      const py = await client.callTool({ name: 'run_python', arguments: { code: 'print("hi")\nsum(range(10))', seed: 3 } });
      assert.equal(py.structuredContent.value, 45);
      assert.equal(py.structuredContent.stdout, 'hi\n');
      // failures are results too, and their structuredContent still conforms
      const failed = await client.callTool({ name: 'run_python', arguments: { code: '1/0' } });
      assert.equal(failed.isError, true);
      assert.equal(failed.structuredContent.error.kind, 'runtime_error');
      assert.equal(failed.structuredContent.error.type, 'ZeroDivisionError');
      const limited = await client.callTool({
        name: 'run_lua', arguments: { code: 'while true do end', limits: { instructions: 1000 } },
      });
      assert.deepEqual(limited.structuredContent.error.limit, { name: 'instructions', limit: 1000, used: 1000 });
      const sessions = await client.callTool({ name: 'list_sessions', arguments: {} });
      assert.deepEqual(sessions.structuredContent, { sessions: [] });
    });

    test('bad arguments are isError results the model can read', async () => {
      await client.listTools();
      for (const [args, want] of [
        [{}, "'code' must be a string"],
        [{ code: 42 }, "'code' must be a string"],
        [{ code: 'return 1', timeout: 5 }, "unknown parameter 'timeout'"],
        [{ code: 'return 1', limits: { cpu_ms: 999999 } },
          "limit 'cpu_ms' may only be tightened: 999999 > ceiling 5000 (policy 'standard')"],
      ]) {
        const r = await client.callTool({ name: 'run_lua', arguments: args });
        assert.equal(r.isError, true);
        assert.equal(r.structuredContent, undefined);
        assert.equal(text(r), want);
      }
      await assert.rejects(client.callTool({ name: 'run_ruby', arguments: {} }),
        (e) => e.code === -32602 && /Unknown tool: run_ruby/.test(e.message));
    });

    test('20 concurrent calls each get their own answer', async () => {
      const calls = Array.from({ length: 20 }, (_, i) => client.callTool({
        name: i % 2 ? 'run_python' : 'run_lua',
        arguments: i % 2 ? { code: `${i} * 3` } : { code: `return ${i} * 3` },
      }));
      const results = await Promise.all(calls);
      assert.deepEqual(results.map((r) => r.structuredContent.value), Array.from({ length: 20 }, (_, i) => i * 3));
    });

    test('an AbortSignal cancels a running call', async () => {
      const ac = new AbortController();
      const started = Date.now();
      const running = call(c, client, { name: 'run_lua', arguments: { code: 'while true do end' } }, { signal: ac.signal });
      setTimeout(() => ac.abort('enough'), 300);
      await assert.rejects(running);
      assert.ok(Date.now() - started < 3000);
      // the server stopped it and goes on serving
      const r = await client.callTool({ name: 'run_lua', arguments: { code: 'return 1' } });
      assert.equal(r.structuredContent.value, 1);
    });

    test('progress resets the request timeout', async () => {
      const code = 'local t = os.clock() while os.clock() - t < 2.5 do end return 7';
      let seen = 0;
      const r = await call(c, client, { name: 'run_lua', arguments: { code } }, {
        timeout: 1200, resetTimeoutOnProgress: true, onprogress: () => { seen++; },
      });
      assert.equal(r.structuredContent.value, 7);
      assert.ok(seen >= 3, `only ${seen} progress notifications`);
      // without the reset, the same call times out: the progress is what kept it alive
      await assert.rejects(call(c, client, { name: 'run_lua', arguments: { code } }, {
        timeout: 1200, onprogress: () => {},
      }), (e) => /timed out|timeout/i.test(e.message));
    });
  });
}

// How a client ends tidepool (README "Ending a session"): the SDKs' close()
// ends stdin, waits 2 s for the exit, then sends SIGTERM (and SIGKILL 2 s
// later). EOF finishes what is in flight, so with nothing running close() is
// over at once; with a snippet running, SIGTERM cancels it and tidepool exits
// within 0.5 s of the signal, before the SIGKILL.
const linuxChildren = (pid) => {
  try {
    return execFileSync('cat', [`/proc/${pid}/task/${pid}/children`]).toString().trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
};
const goneAll = async (pids) => {
  for (let i = 0; i < 300; i++) {
    if (pids.every((p) => { try { process.kill(Number(p), 0); return false; } catch { return true; } })) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
};
describe('close()', () => {
  for (const c of [CLIENTS[0], CLIENTS[1], CLIENTS[CLIENTS.length - 1]]) {
    test(`${c.name}: with nothing running, at once (no SIGTERM)`, async () => {
      const { client, transport } = await connect(c);
      const pid = transport.pid;
      await client.listTools();
      const t = Date.now();
      await client.close();
      const took = Date.now() - t;
      assert.ok(took < 1500, `close() took ${took} ms`);
      assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    });
    test(`${c.name}: with a snippet running, SIGTERM stops it within the grace period`, async () => {
      const { client, transport } = await connect(c);
      const pid = transport.pid;
      let exit = null;
      transport._process.once('exit', (code, signal) => { exit = { code, signal }; });
      const running = client.callTool({ name: 'run_python', arguments: { code: 'while True: pass' } });
      running.catch(() => {});
      await new Promise((r) => setTimeout(r, 500));
      const kids = linuxChildren(pid);
      // the zygote and the running worker (where the kernel lists children)
      if (existsSync(`/proc/${pid}/task/${pid}/children`)) assert.ok(kids.length >= 2, `children: ${kids}`);
      const t = Date.now();
      await client.close();
      const took = Date.now() - t;
      // 2 s of grace after EOF (the snippet runs on, as EOF finishes what is in
      // flight), then SIGTERM: tidepool's own exit status, not SIGKILL's
      assert.ok(took >= 1900 && took < 2500, `close() took ${took} ms`);
      assert.deepEqual(exit, { code: 143, signal: null });
      assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
      assert.ok(await goneAll(kids), `left alive: ${kids}`);
      await assert.rejects(running);
    });
  }
});

// Files in and out under the default policy (its sessions have a workspace): the
// SDK checks each file tool's structuredContent against its outputSchema.
// Workspaces need Landlock (without it sessions get none, and the files tools say so).
const hasLandlock = /Landlock\s+ABI \d/.test(execFileSync(BIN, ['doctor']).toString());
describe('a session\'s files through MCP', () => {
  for (const c of [CLIENTS[0], CLIENTS[1], CLIENTS[CLIENTS.length - 1]]) {
    test(`${c.name}: write_file, code reads and writes, read_file, list_files`, { skip: !hasLandlock && 'this kernel has no Landlock: sessions get no workspace' }, async () => {
      const { client } = await connect(c);
      try {
        await client.listTools();
        const open = await call(c, client, { name: 'run_python', arguments: { code: 'n = 0', session: 'new' } });
        const session_id = open.structuredContent.session_id;
        const w = await call(c, client, { name: 'write_file', arguments: { session_id, path: 'in.csv', text: 'a,b\n1,2\n' } });
        assert.deepEqual(w.structuredContent, { path: 'in.csv', bytes: 8 });
        const code = "rows = open('in.csv').read().split()\nopen('out.txt', 'w').write(str(len(rows)))\nlen(rows)";
        const r = await call(c, client, { name: 'run_python', arguments: { code, session: session_id } });
        assert.equal(r.structuredContent.value, 2);
        // what the code wrote comes back: listed, linked, embedded, and read as a resource
        const uri = `tidepool://sessions/${session_id}/files/out.txt`;
        assert.deepEqual(r.structuredContent.files, [{ path: 'out.txt', size: 1, mime: 'text/plain', change: 'created' }]);
        assert.deepEqual(r.content.slice(1), [
          { type: 'resource_link', uri, name: 'out.txt', mimeType: 'text/plain', size: 1 },
          { type: 'resource', resource: { uri, mimeType: 'text/plain', text: '2' } }]);
        const rr = await client.readResource({ uri });
        assert.deepEqual(rr.contents, [{ uri, mimeType: 'text/plain', text: '2' }]);
        const got = await call(c, client, { name: 'read_file', arguments: { session_id, path: 'out.txt' } });
        assert.deepEqual(got.structuredContent, { path: 'out.txt', bytes: 1, text: '2' });
        const ls = await call(c, client, { name: 'list_files', arguments: { session_id } });
        assert.deepEqual(ls.structuredContent, { files: [{ path: 'in.csv', bytes: 8 }, { path: 'out.txt', bytes: 1 }], complete: true });
      } finally {
        await client.close();
      }
    });
  }
});

// The data preset's done-when (issue 16): a pandas group-by and a matplotlib chart
// come back through MCP as a table (records and text) and an image content item.
let hasData = true;
try {
  execFileSync('/usr/bin/python3.11', ['-c', 'import numpy, pandas, matplotlib']);
} catch {
  hasData = false;
}
describe('the data preset through MCP', () => {
  for (const c of [CLIENTS[0], CLIENTS[1], CLIENTS[CLIENTS.length - 1]]) {
    test(`${c.name}: a group-by as a table, a chart as an image`, { skip: !hasData && 'python3-numpy, -pandas or -matplotlib not installed (make deps)' }, async () => {
      const { client } = await connect(c, ['--policy', 'data']);
      try {
        await client.listTools();
        const code = "import pandas as pd\ndf = pd.DataFrame({'k': ['a', 'b', 'a'], 'v': [1, 2, 3]})\n" +
          "s = df.groupby('k')['v'].sum()\ns.plot(kind='bar')\ns";
        const r = await call(c, client, { name: 'run_python', arguments: { code } }, { timeout: 60000 });
        assert.equal(r.isError, false);
        assert.deepEqual(r.content.map((b) => b.type), ['text', 'image']);
        assert.equal(r.content[1].mimeType, 'image/png');
        const png = Buffer.from(r.content[1].data, 'base64');
        assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
        assert.deepEqual(r.structuredContent.value, [{ k: 'a', v: 4 }, { k: 'b', v: 2 }]);
        assert.equal(r.structuredContent.text, 'k\na    4\nb    2\nName: v, dtype: int64');
        assert.deepEqual(r.structuredContent.images, [{ mime: 'image/png', bytes: png.length }]);
      } finally {
        await client.close();
      }
    });
  }
});

// Issue 28's code-interpreter loop, end to end: upload a CSV, group and chart it with
// pandas and matplotlib in a session, get the chart as an image content item and as a
// workspace file (a resource), and the derived CSV back. Every revision's way in.
const SALES = 'region,amount\nnorth,10\nsouth,5\nnorth,7\neast,3\nsouth,1\n';
const BY_REGION = 'region,amount\neast,3\nnorth,17\nsouth,6\n';
describe('the code-interpreter loop through MCP', () => {
  for (const c of CLIENTS) {
    test(`${c.name}: a CSV in, a group-by, the chart and the derived CSV out`, { skip: (!hasData && 'python3-numpy, -pandas or -matplotlib not installed (make deps)') || (!hasLandlock && 'this kernel has no Landlock: sessions get no workspace') }, async () => {
      const { client } = await connect(c, ['--policy', 'data']);
      try {
        await client.listTools();
        const open = await call(c, client, { name: 'run_python', arguments: { code: 'pass', session: 'new' } }, { timeout: 60000 });
        const session_id = open.structuredContent.session_id;
        const w = await call(c, client, { name: 'write_file', arguments: { session_id, path: 'sales.csv', text: SALES } });
        assert.deepEqual(w.structuredContent, { path: 'sales.csv', bytes: SALES.length });
        const code = "import pandas as pd\nimport matplotlib.pyplot as plt\n" +
          "df = pd.read_csv('sales.csv')\n" +
          "g = df.groupby('region')['amount'].sum().reset_index()\n" +
          "g.to_csv('by_region.csv', index=False)\n" +
          "g.plot(kind='bar', x='region', y='amount')\nplt.savefig('chart.png')\ng";
        const r = await call(c, client, { name: 'run_python', arguments: { code, session: session_id } }, { timeout: 60000 });
        assert.equal(r.isError, false, text(r));
        assert.deepEqual(r.structuredContent.value, [
          { region: 'east', amount: 3 }, { region: 'north', amount: 17 }, { region: 'south', amount: 6 }]);
        // the chart as an image content item (the figure left open) ...
        const img = r.content.find((b) => b.type === 'image');
        assert.equal(img.mimeType, 'image/png');
        const magic = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
        assert.deepEqual([...Buffer.from(img.data, 'base64').subarray(0, 8)], magic);
        // ... and the files the code wrote, listed, linked (2025-06-18 and later) and readable
        const files = r.structuredContent.files;
        assert.deepEqual(files.map((f) => [f.path, f.mime, f.change]), [
          ['by_region.csv', 'text/csv', 'created'], ['chart.png', 'image/png', 'created']]);
        assert.equal(files[0].size, BY_REGION.length);
        const chartUri = `tidepool://sessions/${session_id}/files/chart.png`;
        const csvUri = `tidepool://sessions/${session_id}/files/by_region.csv`;
        const links = r.content.filter((b) => b.type === 'resource_link').map((b) => b.uri);
        const linked = !['2024-11-05', '2025-03-26'].includes(c.rev);
        assert.deepEqual(links, linked ? [csvUri, chartUri] : []);
        const embedded = r.content.filter((b) => b.type === 'resource').map((b) => b.resource);
        assert.deepEqual(embedded.find((x) => x.uri === csvUri), { uri: csvUri, mimeType: 'text/csv', text: BY_REGION });
        const png = await client.readResource({ uri: chartUri });
        assert.equal(png.contents[0].mimeType, 'image/png');
        const bytes = Buffer.from(png.contents[0].blob, 'base64');
        assert.deepEqual([...bytes.subarray(0, 8)], magic);
        assert.equal(bytes.length, files[1].size);
        const back = await call(c, client, { name: 'read_file', arguments: { session_id, path: 'by_region.csv' } });
        assert.deepEqual(back.structuredContent, { path: 'by_region.csv', bytes: BY_REGION.length, text: BY_REGION });
      } finally {
        await client.close();
      }
    });
  }
});

// The same clients over MCP's Streamable HTTP transport (--listen
// http://127.0.0.1:0; docs/clients.md, HTTP): one tidepool serves them all,
// each an MCP session of its own (or, pinned to the stateless revision, a
// client per POST).
describe('over HTTP', () => {
  const SPIN = "local t = os.clock() while os.clock() - t < 1.8 do end return 'done'";
  let proc;
  let url;
  before(async () => {
    proc = spawn(BIN, ['--listen', 'http://127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    url = await new Promise((resolve, reject) => {
      let err = '';
      proc.stderr.on('data', (d) => {
        err += d;
        const m = err.match(/listening on (http:\/\/\S+)/);
        if (m) resolve(new URL(m[1]));
      });
      proc.on('exit', (code) => reject(new Error(`tidepool exited ${code}: ${err}`)));
    });
  });
  after(() => {
    proc?.kill('SIGTERM');
  });
  for (const c of CLIENTS) {
    test(`${c.name}: tools, an exec, a session across calls`, async () => {
      const client = c.v1 ? new ClientV1(INFO)
        : new Client(INFO, c.rev === MODERN ? { versionNegotiation: { mode: { pin: MODERN } } }
          : { supportedProtocolVersions: [c.rev] });
      const transport = c.v1 ? new HttpV1(url) : new StreamableHTTPClientTransport(url);
      await client.connect(transport);
      try {
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).slice(0, 4), ['run_lua', 'run_python', 'list_sessions', 'close_session']);
        const r = await call(c, client, { name: 'run_lua', arguments: { code: 'return 6*7' } });
        assert.equal(r.isError, false);
        assert.equal(r.structuredContent.value, 42);
        if (c.rev !== MODERN) { /* sessions live in an MCP session, which a stateless client has not */
          const s = await call(c, client, { name: 'run_python', arguments: { code: 'x = 20', session: 'new' } });
          const s2 = await call(c, client, { name: 'run_python', arguments: { code: 'x + 1', session: s.structuredContent.session_id } });
          assert.equal(s2.structuredContent.value, 21);
        }
        // progress comes on the call's SSE stream and keeps it alive
        {
          let seen = 0;
          const p = await call(c, client, { name: 'run_lua', arguments: { code: SPIN } }, {
            timeout: 1200, resetTimeoutOnProgress: true, onprogress: () => { seen++; },
          });
          assert.equal(p.structuredContent.value, 'done');
          assert.ok(seen >= 2, `only ${seen} progress notifications`);
        }
      } finally {
        await client.close();
      }
    });
  }
});
