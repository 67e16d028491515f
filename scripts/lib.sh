# Shared by the scripts in this folder: paths, dependency install, build.
set -euo pipefail

RINGSIDE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RINGSIDE_BUILD="${RINGSIDE_BUILD:-$RINGSIDE_ROOT/build}"
RINGSIDE_JOBS="${RINGSIDE_JOBS:-$(nproc)}"

# Debian 12 packages the build, the tests and the demo need.
RINGSIDE_PACKAGES=(
  build-essential cmake pkg-config clang-format
  libhdf5-dev hdf5-tools libopenmpi-dev openmpi-bin libeigen3-dev libcli11-dev
  nlohmann-json3-dev libjemalloc-dev libgtest-dev python3 python3-h5py python3-numpy
  slurm-wlm libslurm-dev munge procps bc time
  chromium
)

# Each line says when it was printed (seconds since the script started), so that a
# long log shows where the time went.
log() { printf '[ringside] %4ds %s\n' "$SECONDS" "$*" >&2; }
die() { printf '[ringside] error: %s\n' "$*" >&2; exit 2; }

install_packages() {
  local missing=()
  for p in "${RINGSIDE_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing missing packages: ${missing[*]}"
    local sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  local cuda="${CUDAToolkit_ROOT:-/usr/local/cuda}"
  [[ -f "$cuda/include/cuda.h" && -f "$cuda/include/nccl.h" ]] ||
    die "the CUDA 13 toolkit with NCCL is required under $cuda (set CUDAToolkit_ROOT to use another place)"
}

# configure_and_build BUILD_DIR [cmake args...] -- [targets...]
configure_and_build() {
  local dir="$1"; shift
  local cmake_args=() targets=()
  while (($#)) && [[ "$1" != "--" ]]; do cmake_args+=("$1"); shift; done
  (($#)) && shift
  targets=("$@")
  # Optimized; debug information only in the sanitizer build, whose reports quote
  # source lines: without it a build takes about a quarter less time.  The sanitizer
  # build needs line tables only (-g1) and no optimization: with AddressSanitizer
  # and UBSan, -O1 doubles the compile time of a file against -O0, and the
  # sanitized tests run no faster for it.
  local type=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
    "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG")
  [[ " ${cmake_args[*]} " == *" -DRINGSIDE_ASAN=ON "* ]] &&
    type=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -g1 -DNDEBUG"
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O0 -g1 -DNDEBUG")
  cmake -S "$RINGSIDE_ROOT" -B "$dir" "${type[@]}" "${cmake_args[@]}" >/dev/null
  if ((${#targets[@]})); then
    cmake --build "$dir" -j "$RINGSIDE_JOBS" --target "${targets[@]}"
  else
    cmake --build "$dir" -j "$RINGSIDE_JOBS"
  fi
}
