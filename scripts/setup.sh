#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent; needs root (or sudo).
set -euo pipefail
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# Packages such as nginx and postgresql start a system service when installed; the tests run their
# own instances on loopback, so keep the package scripts from starting services during this
# install (a temporary policy-rc.d, removed afterwards if we created it).
created_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
  $SUDO chmod +x /usr/sbin/policy-rc.d
  created_policy=1
fi
trap 'if [ "$created_policy" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi' EXIT
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential g++ cmake ninja-build ccache pkg-config git \
  libhwy-dev nlohmann-json3-dev libpcre2-dev libutf8proc-dev \
  libpng-dev libjpeg-dev libwebp-dev libtiff-dev \
  libpoppler-cpp-dev libcpp-httplib-dev libcli11-dev libxxhash-dev libsqlite3-dev \
  libgtest-dev libgmock-dev libbenchmark-dev \
  libcurl4-openssl-dev poppler-utils chromium clang clang-format-14 clang-tidy-14 libclang-rt-14-dev \
  postgresql libpq-dev nginx python3-jsonschema
# Node.js + npm for web/ (the page build and its browser test). A NodeSource nodejs already
# includes npm and conflicts with Debian's npm package; Debian 12's own nodejs 18 is enough.
if ! command -v npm >/dev/null 2>&1; then
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
