#!/usr/bin/env bash
# A folder that runs the CUDA build on another x86-64 Linux machine that has only the NVIDIA driver
# and a CUDA 13 runtime with cuBLAS (another distribution, none of our Debian -dev packages, nothing
# installable):
#
#   scripts/package_gpu.sh OUT_DIR [BUILD_DIR [EXTRA_BINARY...]]
#
# BUILD_DIR (default build-cuda) must hold a CUDA build (cmake -DMINERU_CUDA=ON). OUT_DIR gets:
#   OUT_DIR/mineru-cpp        the launcher to run (and one per EXTRA_BINARY, by its name)
#   OUT_DIR/bin/              the binaries, stripped
#   OUT_DIR/lib/              every shared library they load, this build machine's glibc and its
#                             loader included, so the machine's own glibc version does not matter;
#                             not cuBLAS (~0.5 GB: the launcher finds the machine's libcublasLt.so.13)
#                             nor the driver's libcuda.so.1 (the machine's, always)
#   OUT_DIR/web/              serve's web page, when web/dist is built (serve --web-dir OUT_DIR/web;
#                             PACKAGE_GPU_NO_WEB=1 leaves it out)
# The launcher runs the binary through the bundled loader with OUT_DIR/lib first, then the
# directories holding the machine's cuBLAS 13 and libcuda.so.1 ($CUDA_HOME/lib64, /usr/local/cuda,
# the loader cache), and says what is missing when one is not found. Typically ~40 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || {
  echo "usage: scripts/package_gpu.sh OUT_DIR [BUILD_DIR [EXTRA_BINARY...]]" >&2
  exit 2
}
out=$1
build=${2:-build-cuda}
shift $(($# >= 2 ? 2 : 1))
cli=$build/src/cli/mineru-cpp
[ -x "$cli" ] || {
  echo "package_gpu: $cli missing: build with -DMINERU_CUDA=ON first" >&2
  exit 1
}
grep -q 'MINERU_HAVE_CUDA' "$build/CMakeCache.txt" 2>/dev/null || grep -q 'MINERU_CUDA:STRING=ON' "$build/CMakeCache.txt" ||
  echo "package_gpu: warning: $build may not be a CUDA build" >&2
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"

add_binary() {  # BINARY
  local bin=$1 name
  name=$(basename "$bin")
  cp "$bin" "$out/bin/$name"
  chmod u+w "$out/bin/$name"
  strip --strip-unneeded "$out/bin/$name" 2>/dev/null || true
  # Every library it loads (ldd: the whole closure), the loader included, except cuBLAS and the driver.
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
    local base
    base=$(basename "$lib")
    case "$base" in
      libcublas* | libcuda.so*) continue ;;
    esac
    if [ ! -e "$out/lib/$base" ]; then
      cp -L "$lib" "$out/lib/$base"
      chmod u+w "$out/lib/$base"
      case "$base" in ld-linux* | libc.so*) ;; *) strip --strip-unneeded "$out/lib/$base" 2>/dev/null || true ;; esac
    fi
  done
  write_launcher "$name"
}

write_launcher() {  # NAME
  local name=$1
  cat >"$out/$name" <<LAUNCHER
#!/bin/sh
# Runs bin/$name with this folder's libraries, the machine's cuBLAS 13 and its NVIDIA driver.
here=\$(cd "\$(dirname "\$0")" && pwd)
cublas=""
for d in "\${CUDA_HOME:-/nonexistent}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \\
  /usr/local/cuda-13*/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64; do
  if [ -e "\$d/libcublasLt.so.13" ]; then cublas=\$d; break; fi
done
if [ -z "\$cublas" ] && command -v ldconfig >/dev/null 2>&1; then
  cublas=\$(dirname "\$(ldconfig -p | awk '/libcublasLt.so.13 /{print \$NF; exit}')" 2>/dev/null || true)
fi
driver=""
if command -v ldconfig >/dev/null 2>&1; then
  driver=\$(ldconfig -p | awk '/libcuda.so.1 /{print \$NF; exit}')
  [ -n "\$driver" ] && driver=\$(dirname "\$driver")
fi
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib/wsl/lib; do
  if [ -z "\$driver" ] && [ -e "\$d/libcuda.so.1" ]; then driver=\$d; fi
done
if [ -z "\$cublas" ]; then
  echo "$name: libcublasLt.so.13 (CUDA 13's cuBLAS) not found: set CUDA_HOME to the CUDA runtime's folder" >&2
fi
if [ -z "\$driver" ]; then
  echo "$name: the NVIDIA driver's libcuda.so.1 was not found: --device cuda will not find a GPU" >&2
fi
path="\$here/lib\${cublas:+:\$cublas}\${driver:+:\$driver}"
exec "\$here/lib/ld-linux-x86-64.so.2" --library-path "\$path" "\$here/bin/$name" "\$@"
LAUNCHER
  chmod +x "$out/$name"
}

add_binary "$cli"
for extra in "$@"; do add_binary "$extra"; done
if [ "${PACKAGE_GPU_NO_WEB:-0}" != 1 ] && [ -f web/dist/index.html ]; then cp -r web/dist "$out/web"; fi
echo "package_gpu: $out ($(du -sh "$out" | cut -f1)): launchers $(ls "$out" | grep -v -E '^(bin|lib|web)$' | tr '\n' ' ')"
