#!/bin/sh
# Builds tidepool's container image with Debian's own tools: mmdebstrap makes a
# Debian 12 rootfs from the archive apt already uses, podman imports it as the
# base, then builds deploy/Containerfile on it, and runs the MCP smoke test in
# the image: initialize, then a Lua and a Python exec, through the binary's
# stdio. Usage: deploy/build-image.sh [TAG] (default localhost/tidepool:dev).
set -eu
tag=${1:-localhost/tidepool:dev}
base=localhost/tidepool-base:bookworm
top=$(cd "$(dirname "$0")/.." && pwd)
for tool in mmdebstrap podman; do
	command -v $tool >/dev/null || { echo "build-image: $tool is needed (apt-get install $tool)" >&2; exit 2; }
done
if ! podman image exists "$base"; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mmdebstrap --variant=apt --include=ca-certificates bookworm "$tmp/base.tar"
	podman import --change 'CMD ["/bin/bash"]' "$tmp/base.tar" "$base"
fi
podman build --isolation=chroot --network=host -f "$top/deploy/Containerfile" --build-arg BASE="$base" -t "$tag" "$top"
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_lua","arguments":{"code":"return 6*7"}}}' \
	'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"sum(range(10))"}}}' |
	podman run --rm -i --network=none ${PODMAN_RUN_FLAGS:-} "$tag" --drain-timeout 0 >"${TMPDIR:-/tmp}/tidepool-smoke.out"
grep -q '"structuredContent":{"ok":true,"value":42' "${TMPDIR:-/tmp}/tidepool-smoke.out" &&
	grep -q '"structuredContent":{"ok":true,"value":45' "${TMPDIR:-/tmp}/tidepool-smoke.out" || {
	cat "${TMPDIR:-/tmp}/tidepool-smoke.out"
	echo "build-image: the MCP smoke test failed" >&2
	exit 1
}
echo "build-image: $tag built; the MCP smoke test passed (initialize, a Lua and a Python exec)"
