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
in=$(mktemp) out=$(mktemp)
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_lua","arguments":{"code":"return 6*7"}}}' \
	'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"sum(range(10))"}}}' >"$in"
# The smoke test runs the image with podman; where the OCI runtime cannot
# start it (a VM whose root lacks CAP_SYS_RESOURCE, so crun cannot set the
# container's rlimits; hybrid cgroups), in the image's own rootfs by chroot,
# with a pid and mount namespace of its own: the same files, not the runtime.
# With the Deployment's security settings: every capability dropped but the
# five, no_new_privs, a read-only root, the runtime's default seccomp profile.
secure="--cap-drop ALL --cap-add SETUID --cap-add SETGID --cap-add KILL --cap-add CHOWN
	--cap-add DAC_OVERRIDE --security-opt no-new-privileges --read-only --tmpfs /tmp"
how="podman run (the Deployment's security settings)"
if ! podman run --rm -i --network=none $secure "$tag" --drain-timeout 0 <"$in" >"$out" 2>"$out.err" &&
	! { how="podman --runtime runc run (the Deployment's security settings; rlimits lowered)" &&
		command -v runc >/dev/null &&
		podman --runtime runc run --rm -i --network=none $secure --ulimit nofile=1024:1024 \
			--ulimit nproc=4096:4096 "$tag" --drain-timeout 0 <"$in" >"$out" 2>"$out.err"; }; then
	how="chroot into the image (podman run failed: $(tail -1 "$out.err"))"
	mnt=$(podman image mount "$tag")
	unshare --pid --fork --mount sh -c "mount -t tmpfs tmpfs '$mnt/tmp' && mount -t proc proc '$mnt/proc' &&
		exec chroot '$mnt' /usr/bin/tidepool --drain-timeout 0" <"$in" >"$out"
	podman image unmount "$tag" >/dev/null
fi
if ! grep -q '"structuredContent":{"ok":true,"value":42,' "$out" ||
	! grep -q '"structuredContent":{"ok":true,"value":45,' "$out"; then
	cat "$out"
	echo "build-image: the MCP smoke test failed ($how)" >&2
	exit 1
fi
rm -f "$in" "$out" "$out.err"
echo "build-image: $tag built; the MCP smoke test passed by $how: initialize, a Lua and a Python exec"
