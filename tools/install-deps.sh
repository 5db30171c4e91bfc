#!/usr/bin/env bash
# Installs the Debian 12 packages rootspan builds with, when any is missing.
set -euo pipefail

packages=(meson ninja-build pkg-config g++ python3 libboost-dev nlohmann-json3-dev libsimdjson-dev libgtest-dev libgmock-dev
          libbenchmark-dev libssl-dev libcli11-dev clang-14 libclang-rt-14-dev libamdhip64-dev "$@")
# io_uring for parallel reads (linked statically), and fio, the cold-start
# benchmark's reference reader.
packages+=(liburing-dev fio)
# The install test: a program built with CMake's find_package; the manifest
# checked against its JSON Schema.
packages+=(cmake python3-jsonschema)
# The formatting check of .ci/run and the .clang-tidy checks.
packages+=(clang-format-14 clang-tidy-14)
# The Rust embedding example.
packages+=(rustc)
# setpriv, useradd: the loader's security tests act as a second user.
packages+=(util-linux passwd)
missing=()
# .ci/valgrind: memcheck of the C embedding program and the CLI.
packages+=(valgrind)
# The Python suite's DLPack consumers: Debian's numpy and torch, for /usr/bin/python3;
# venv for tools/test-python-venv.sh (today's numpy and torch from PyPI, and pip install .).
packages+=(python3-numpy python3-torch python3-venv)
# Python's headers: the package's one compiled module, rootspan._describe; dlpack/dlpack.h: its tensor_capsule.
packages+=(python3-dev libdlpack-dev)
# The openssl program: test_signed_models.py makes its keys and certificates with it.
packages+=(openssl)
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
