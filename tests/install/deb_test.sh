#!/usr/bin/env bash
# Builds the .deb with CPack, installs it with dpkg -i, runs `ringside analyze` and
# `nccl_bench` (on the sim the package carries) from /usr, and removes it: nothing of it
# may be left behind.  Needs root; exits 77 (skipped) without it, or when a ringside
# package is already installed (this test never replaces one).  Runs that would overlap
# wait for each other (a lock), as dpkg would refuse the second.
# Usage: deb_test.sh BUILD_DIR
set -euo pipefail
build=$1
fail() { echo "deb_test: $*" >&2; exit 1; }
skip() { echo "deb_test: skipped: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (dpkg -i)"
command -v dpkg >/dev/null && command -v cpack >/dev/null || skip "needs dpkg and cpack"
work=$(mktemp -d "${TMPDIR:-/tmp}/ringside-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/pkg/ringside_*.deb 2>/dev/null | head -1)
[[ -n $deb ]] || fail "cpack made no .deb"
info=$(dpkg-deb --info "$deb")
[[ $info == *"Depends:"*"libhdf5-103-1"* ]] || fail "the package does not depend on HDF5"

exec 9>/var/lock/ringside-deb-test.lock
flock 9
if dpkg-query -W -f='${Status}' ringside 2>/dev/null | grep -q 'install ok installed'; then
  skip "a ringside package is already installed"
fi
dpkg -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; dpkg -r ringside >/dev/null 2>&1 || true; fail "dpkg -i failed"; }
dpkg -L ringside >"$work/files"
remove() { dpkg -r ringside >"$work/remove.log" 2>&1; }
trap 'remove || true; rm -rf "$work"' EXIT

cd "$work"
[[ $(command -v ringside) == /usr/bin/ringside ]] || fail "ringside is not /usr/bin/ringside"
[[ $(ringside --version) == "ringside "* ]] || fail "ringside --version"
ringside synth -o synth -n 8 -N 2 --fault straggler:rank=3,factor=1.3 >/dev/null
status=0
ringside analyze synth >report.txt || status=$?
[[ $status -eq 1 ]] && grep -q '\[straggler/gpu\] rank 3 ' report.txt || { cat report.txt; fail "analyze from /usr: exit $status"; }
LD_LIBRARY_PATH=/usr/lib/ringside/sim simrun -n 2 --timeout 300 -- nccl_bench all_reduce -b 8 -e 1K -f 4 >bench.txt 2>&1 ||
  { cat bench.txt; fail "nccl_bench from /usr on the sim failed"; }
grep -q 'Avg bus bandwidth' bench.txt || { cat bench.txt; fail "nccl_bench printed no summary"; }
: >node-check.conf
RINGSIDE_NODE_CHECK_CONF=$work/node-check.conf /usr/sbin/ringside-node-check --check-config >check-config.txt &&
  grep -qF 'nccl_bench: /usr/bin/nccl_bench' check-config.txt ||
  { cat check-config.txt; fail "/usr/sbin/ringside-node-check does not find /usr/bin/nccl_bench"; }

remove || { cat "$work/remove.log"; fail "dpkg -r failed"; }
trap 'rm -rf "$work"' EXIT
left=0
while read -r f; do
  [[ -f $f || -L $f ]] && { echo "left behind: $f" >&2; left=1; }
done <"$work/files"
[[ $left -eq 0 ]] || fail "files of the package are left after dpkg -r"
echo "deb_test: ok ($(basename "$deb"))"
