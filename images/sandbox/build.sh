#!/usr/bin/env bash
# Builds the sandbox image (make image runs this from the repository root).
#
#   ENGINE      the container CLI: docker or podman (default: docker if
#               installed, else podman)
#   IMAGE       the image to build (default codemode-sandbox:latest)
#   BASE_IMAGE  the base with Python; when unset, codemode-base:bookworm,
#               which is made with debootstrap if the engine does not have
#               it, so no registry is needed (this needs root)
#   CACHE_DIR   where the debootstrap root is kept as a tarball, so the
#               next engine store imports it without downloading again
#               (default ${XDG_CACHE_HOME:-~/.cache}/codemode)
set -euo pipefail

ENGINE="${ENGINE:-$(command -v docker || command -v podman || true)}"
IMAGE="${IMAGE:-codemode-sandbox:latest}"
CACHE_DIR="${CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/codemode}"
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [ -z "$ENGINE" ]; then
	echo "make image: no container engine CLI found: install docker or podman, or set ENGINE" >&2
	exit 1
fi

if [ -z "${BASE_IMAGE:-}" ]; then
	BASE_IMAGE="codemode-base:$SUITE"
	if ! "$ENGINE" image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
		tarball="$CACHE_DIR/base-$SUITE.tar"
		if [ ! -s "$tarball" ]; then
			if ! command -v debootstrap >/dev/null; then
				echo "make image: $BASE_IMAGE is not in the engine and debootstrap is not installed:" >&2
				echo "  install it (apt-get install debootstrap), or pass BASE_IMAGE=python:3.13-slim where a registry is reachable" >&2
				exit 1
			fi
			if [ "$(id -u)" != 0 ]; then
				echo "make image: debootstrap needs root to make $BASE_IMAGE; run as root, or pass BASE_IMAGE=python:3.13-slim" >&2
				exit 1
			fi
			root="$(mktemp -d)"
			trap 'rm -rf "$root"' EXIT
			echo "make image: making $BASE_IMAGE with debootstrap from $MIRROR (about a minute, once)"
			debootstrap --variant=minbase --include=python3 "$SUITE" "$root" "$MIRROR" >"$root.log" 2>&1 \
				|| { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
			rm -f "$root.log"
			mkdir -p "$CACHE_DIR"
			tar -C "$root" -c . >"$tarball.partial"
			mv "$tarball.partial" "$tarball"
			rm -rf "$root"
			trap - EXIT
		fi
		echo "make image: importing $BASE_IMAGE from $tarball"
		"$ENGINE" import "$tarball" "$BASE_IMAGE" >/dev/null
	fi
fi

mkdir -p images/sandbox/.bin
CGO_ENABLED=0 go build -trimpath -o images/sandbox/.bin/codemode-sandbox ./cmd/codemode-sandbox
"$ENGINE" build -f images/sandbox/Dockerfile \
	--build-arg BASE_IMAGE="$BASE_IMAGE" --build-arg SERVER=prebuilt \
	-t "$IMAGE" .
echo "make image: built $IMAGE on $BASE_IMAGE"
