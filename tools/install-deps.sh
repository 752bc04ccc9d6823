#!/usr/bin/env bash
# Installs the Debian packages sdfed needs to build, run and test, on Debian 12.
#   tools/install-deps.sh [--bench]
# Works as root or through sudo; does nothing when every package is already there.
. "$(dirname "$0")/help.sh" "$@"
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang lld-14 llvm-14
  libopenblas-dev libopenblas-serial-dev
  libpng-dev libjpeg-dev libdeflate-dev zlib1g-dev # zlib: the tests write gzip files with it
  libwebsockets-dev libssl-dev libsqlite3-dev sqlite3 openssl curl
  libpq-dev postgresql-15 # the store's PostgreSQL back end; its tests start a server of their own
  haproxy # in front of a cluster's nodes (make run-cluster, the cluster test)
  emscripten node-acorn nodejs chromium
  clang-16 lld-16 llvm-16 # the browser's relaxed-SIMD tile (shared/kernels/relaxed_tile.c), beside emcc's clang 14
  wasi-libc libclang-rt-14-dev-wasm32 libclang-rt-14-dev
  binaryen
  python3-torch python3-numpy python3-pil
  dataset-fashion-mnist
)
# --bench: also what make bench's ONNX Runtime peers need (tools/bench/clip_onnx.py exports the models)
[ "${1:-}" = --bench ] && packages+=(python3-onnx)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
