#!/usr/bin/env bash
# Bring up a Docker engine and a loopback registry for hourly's container tests.
#
# Idempotent: installs Debian's docker.io, docker-registry and busybox-static when missing,
# starts dockerd in the background when no engine answers, and a registry on 127.0.0.1:5000
# (Debian's docker-registry binary, no image from Docker Hub) when none answers there.
# Exits non-zero with a clear message when the engine cannot be started.
#
# Environment knobs (all optional):
#   DOCKERD_LOG        where dockerd logs            (default /tmp/dockerd.log)
#   REGISTRY_ADDR      registry listen address       (default 127.0.0.1:5000)
#   REGISTRY_DIR       registry config + storage dir (default /tmp/hourly-registry)
#   DOCKER_WAIT_S      seconds to wait per attempt   (default 90; a restart can spend
#                      half a minute "loading containers")
set -uo pipefail

DOCKERD_LOG=${DOCKERD_LOG:-/tmp/dockerd.log}
REGISTRY_ADDR=${REGISTRY_ADDR:-127.0.0.1:5000}
REGISTRY_DIR=${REGISTRY_DIR:-/tmp/hourly-registry}
DOCKER_WAIT_S=${DOCKER_WAIT_S:-90}

CI_NAME=docker-up
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# --- 1. packages -------------------------------------------------------------------------
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
dpkg -s busybox-static >/dev/null 2>&1 || missing+=(busybox-static)
apt_install "" "${missing[@]}"

# --- 2. engine ---------------------------------------------------------------------------
engine_up() { timeout 10 docker info >/dev/null 2>&1; }

wait_engine() {  # $1 = pid of the dockerd we started
    local i
    for ((i = 0; i < DOCKER_WAIT_S * 2; i++)); do
        engine_up && return 0
        kill -0 "$1" 2>/dev/null || return 1   # dockerd died: try the next flag set
        sleep 0.5
    done
    return 1
}

if engine_up; then
    say "engine already answering"
else
    # Flag sets from most to least capable. The sandboxes this runs in differ: some lack
    # iptables/bridge support, some can't mount overlayfs. vfs is slow but works everywhere.
    attempts=(
        ""
        "--iptables=false --ip6tables=false --bridge=none"
        "--iptables=false --ip6tables=false --bridge=none --storage-driver=vfs"
    )
    started=""
    for flags in "${attempts[@]}"; do
        say "starting dockerd ${flags:-(default flags)}; log: $DOCKERD_LOG"
        # shellcheck disable=SC2086
        { echo "=== dockerd $flags ($(date -u +%FT%TZ))"; } >>"$DOCKERD_LOG"
        $SUDO nohup dockerd $flags >>"$DOCKERD_LOG" 2>&1 </dev/null &
        pid=$!
        if wait_engine "$pid"; then
            started="$flags"
            break
        fi
        say "dockerd ${flags:-(default flags)} did not come up; last log lines:"
        tail -n 5 "$DOCKERD_LOG" >&2
        $SUDO kill "$pid" 2>/dev/null
        for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        # a dockerd that died leaves its pid file behind and blocks the next attempt
        $SUDO rm -f /var/run/docker.pid
    done
    [ -n "$started" ] || engine_up \
        || die "no Docker engine could be started (tried ${#attempts[@]} flag sets); see $DOCKERD_LOG"
    say "engine up (dockerd ${started:-default flags})"
    # The test user may not be root (CI is; a developer's shell may not be): open the socket
    # of the engine this script started, never that of an engine someone else runs.
    [ "$(id -u)" = 0 ] || $SUDO chmod 666 /var/run/docker.sock 2>/dev/null || true
fi

# --- 3. registry on loopback -------------------------------------------------------------
registry_up() {
    python3 - "$REGISTRY_ADDR" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://{sys.argv[1]}/v2/", timeout=2).read()
EOF
}

if registry_up; then
    say "registry already answering on $REGISTRY_ADDR"
else
    mkdir -p "$REGISTRY_DIR/storage"
    cat >"$REGISTRY_DIR/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/storage
  delete:
    enabled: true
http:
  addr: $REGISTRY_ADDR
EOF
    say "starting docker-registry on $REGISTRY_ADDR; log: $REGISTRY_DIR/registry.log"
    nohup docker-registry serve "$REGISTRY_DIR/config.yml" >>"$REGISTRY_DIR/registry.log" 2>&1 </dev/null &
    rpid=$!
    for ((i = 0; i < 40; i++)); do
        registry_up && break
        kill -0 "$rpid" 2>/dev/null || break
        sleep 0.25
    done
    registry_up || { tail -n 5 "$REGISTRY_DIR/registry.log" >&2; die "registry did not start on $REGISTRY_ADDR"; }
    say "registry up on $REGISTRY_ADDR"
fi
