#!/usr/bin/env bash
# A local Docker engine plus the sandbox image, built offline (no registry is reachable here:
# the image's root filesystem comes from Debian packages via mmdebstrap, then `docker import`,
# then docker/Dockerfile on top).
#
#   scripts/docker-local.sh up       engine running + image current (idempotent, seconds when so)
#   scripts/docker-local.sh down     stop the dockerd this script started (images are kept)
#   scripts/docker-local.sh status   say what runs and which image is there
#
# `up` reuses any engine that already answers ($DOCKER_HOST or /var/run/docker.sock); only
# without one does it start `dockerd --iptables=false --bridge=none` (root, no systemd needed).
# The image is rebuilt when docker/Dockerfile or the package list below changes (a label on
# the image records what it was built from). State lives outside the repository, in
# $CODEGEN_DOCKER_STATE (default /var/lib/codegen-lab-docker): dockerd's pid file and log, the
# root filesystem tarball, a lock. Needs root and the packages docker.io and mmdebstrap
# (scripts/apt-packages.txt). Debian mirror: $CODEGEN_DEBIAN_MIRROR, else the host's
# /etc/apt/sources.list.d/debian.sources when it is bookworm's, else deb.debian.org (plus
# bookworm-updates and -security).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${CODEGEN_DOCKER_STATE:-/var/lib/codegen-lab-docker}"
IMAGE="${CODEGEN_SANDBOX_IMAGE:-codegen-lab-sandbox:latest}"
BASE_IMAGE="codegen-lab-sandbox-base:bookworm"
SUITE=bookworm
# Keep in step with docker/Dockerfile's fallback list and the toolchains in sandboxes/.
PACKAGES="gcc,g++,make,libc6-dev,openmpi-bin,libopenmpi-dev,iverilog,verilator"
SOCKET=/var/run/docker.sock
export DOCKER_BUILDKIT=0 # the classic builder: no buildx plugin needed

say() { printf '[docker-local] %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

engine_ok() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

stamp() {
  { cat "$ROOT/docker/Dockerfile"; echo "$SUITE $PACKAGES ${CODEGEN_DEBIAN_MIRROR:-}"; } |
    sha256sum | cut -c1-16
}

start_engine() {
  if engine_ok; then return 0; fi
  [ -z "${DOCKER_HOST:-}" ] || [ "${DOCKER_HOST}" = "unix://$SOCKET" ] ||
    die "no engine answers at DOCKER_HOST=$DOCKER_HOST (this script starts one only at $SOCKET)"
  [ "$(id -u)" -eq 0 ] || die "no Docker engine answers and starting dockerd needs root"
  command -v dockerd >/dev/null || die "dockerd is missing: apt-get install docker.io (scripts/setup.sh)"
  say "starting dockerd (log: $STATE/dockerd.log)"
  # setsid: the engine outlives this script and the test session that called it.
  setsid dockerd --iptables=false --ip-masq=false --bridge=none -H "unix://$SOCKET" \
    --pidfile "$STATE/dockerd.pid" >>"$STATE/dockerd.log" 2>&1 </dev/null 9>&- &
  for _ in $(seq 1 120); do
    if engine_ok; then say "dockerd is up"; return 0; fi
    sleep 0.25
  done
  tail -n 30 "$STATE/dockerd.log" >&2
  die "dockerd did not answer within 30 s"
}

build_image() {
  local want have
  want="$(stamp)"
  have="$(docker image inspect -f '{{index .Config.Labels "codegen-lab.stamp"}}' "$IMAGE" 2>/dev/null || true)"
  if [ "$have" = "$want" ]; then return 0; fi
  command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: apt-get install mmdebstrap (scripts/setup.sh)"
  local tar="$STATE/rootfs-$want.tar" t0=$SECONDS
  if [ ! -s "$tar" ]; then
    say "building the root filesystem ($SUITE: $PACKAGES) with mmdebstrap"
    rm -rf "$STATE"/rootfs-*.tar
    # The host's own Debian sources when they are bookworm's (the mirror apt already
    # reaches here), else mmdebstrap's default: deb.debian.org plus updates and security.
    local mirror=() host_sources=/etc/apt/sources.list.d/debian.sources
    if [ -n "${CODEGEN_DEBIAN_MIRROR:-}" ]; then
      mirror=("$CODEGEN_DEBIAN_MIRROR")
    elif [ -f "$host_sources" ] && grep -q "^Suites:.*\b$SUITE\b" "$host_sources"; then
      mirror=("$host_sources")
    fi
    mmdebstrap --quiet --variant=minbase --include="$PACKAGES" \
      --customize-hook='rm -rf "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/var/cache/apt/*.bin' \
      "$SUITE" "$tar.part.tar" "${mirror[@]}" || { rm -f "$tar.part.tar"; die "mmdebstrap failed"; }
    mv "$tar.part.tar" "$tar"
  fi
  say "importing it as $BASE_IMAGE"
  docker import "$tar" "$BASE_IMAGE" >/dev/null
  say "building $IMAGE from docker/Dockerfile"
  docker build -q --network none --build-arg "BASE=$BASE_IMAGE" --label "codegen-lab.stamp=$want" \
    -t "$IMAGE" "$ROOT/docker" >"$STATE/build.log" 2>&1 || { cat "$STATE/build.log" >&2; die "docker build failed"; }
  say "image $IMAGE ready in $((SECONDS - t0)) s ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

cmd="${1:-}"
case "$cmd" in
  up)
    mkdir -p "$STATE"
    exec 9>"$STATE/lock"
    flock 9 # concurrent `up`s (parallel test sessions) wait for the first one
    start_engine
    build_image
    ;;
  down)
    if [ -s "$STATE/dockerd.pid" ] && kill -0 "$(cat "$STATE/dockerd.pid")" 2>/dev/null; then
      pid="$(cat "$STATE/dockerd.pid")"
      say "stopping dockerd ($pid)"
      kill "$pid"
      for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    else
      say "no dockerd started by this script is running"
    fi
    ;;
  status)
    if engine_ok; then
      say "engine: $(docker version --format '{{.Server.Version}}') at ${DOCKER_HOST:-unix://$SOCKET}"
      have="$(docker image inspect -f '{{index .Config.Labels "codegen-lab.stamp"}}' "$IMAGE" 2>/dev/null || true)"
      if [ -z "$have" ]; then say "image: $IMAGE missing"
      elif [ "$have" = "$(stamp)" ]; then say "image: $IMAGE current"
      else say "image: $IMAGE outdated (run up)"; fi
    else
      say "engine: none answers"
      exit 1
    fi
    ;;
  *)
    echo "usage: scripts/docker-local.sh up | down | status" >&2
    exit 2
    ;;
esac
