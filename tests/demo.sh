#!/bin/sh
# make demo: an example session through build/tidepool, printing each reply.
set -eu
bin=${1:-build/tidepool}
"$bin" <<'REQUESTS'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"sandbox/exec","params":{"lang":"lua","code":"print('hi') return 1+1"}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_lua","arguments":{"code":"local t = {} for i = 1, n do t[i] = i * i end return t","inputs":{"n":5}}}}
{"jsonrpc":"2.0","id":5,"method":"sandbox/exec","params":{"lang":"lua","code":"while true do end","limits":{"instructions":100000}}}
{"jsonrpc":"2.0","id":6,"method":"sandbox/exec","params":{"lang":"lua","code":"return io.open('/etc/passwd')"}}
{"jsonrpc":"2.0","id":7,"method":"sandbox/exec","params":{"lang":"lua","code":"local s = string.rep('x', 1 << 20) return string.rep(s, 1000)","limits":{"memory_bytes":8388608}}}
{"jsonrpc":"2.0","id":8,"method":"no/such/method"}
REQUESTS
