#!/usr/bin/env bash
# cmake --install into a fresh prefix, then use ringside from there as a user would, from
# another working directory and with nothing of the build tree on any path:
#   - the demo: a traced 8-rank run on the sim (the `sim` component) with one slow GPU,
#     analyzed: the straggler is named;
#   - a program of its own built against the installed package, once with
#     find_package(ringside) and once with pkg-config, reads the traces.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/ringside-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log"; fail "cmake --install failed"; }
for f in bin/ringside bin/nccl_bench sbin/ringside-node-check bin/simrun lib/libringside_probe.so lib/libringside_common.a \
         include/ringside/trace_reader.h lib/cmake/ringside/ringsideConfig.cmake \
         lib/pkgconfig/ringside.pc lib/ringside/ringside_mpi.so lib/ringside/sim/libnccl.so.2 libexec/ringside/train_example \
         share/doc/ringside/README.md share/ringside/scenarios/straggler_gpu.json; do
  [[ -e $prefix/$f ]] || fail "$f was not installed"
done
# MPI is the parallel analysis's plugin's alone: `ringside` runs without it.
ldd "$prefix/bin/ringside" | grep -q libmpi && fail "bin/ringside links MPI (only lib/ringside/ringside_mpi.so may)"
# The sim's stand-ins stay off the default library path.
for f in "$prefix"/lib/lib{cuda,cudart,nccl,nvidia-ml}.so*; do
  [[ -e $f ]] && fail "$f is on the prefix's library path; the sim belongs in lib/ringside/sim"
done

cd "$work"
mkdir run && cd run
[[ $("$prefix/bin/ringside" --version) == "ringside "* ]] || fail "ringside --version"
# nccl-tests' names are nccl_bench.
[[ -L $prefix/bin/all_reduce_perf && $(readlink "$prefix/bin/all_reduce_perf") == nccl_bench ]] ||
  fail "bin/all_reduce_perf is not a link to nccl_bench"
"$prefix/bin/sendrecv_perf" --help | grep -q -- '--run_cycles' || fail "sendrecv_perf --help"
# The node check finds the nccl_bench installed beside it.
"$prefix/sbin/ringside-node-check" --check-config --config /dev/null 2>/dev/null >/dev/null &&
  fail "ringside-node-check accepted /dev/null as its configuration"
: >empty.conf
RINGSIDE_NODE_CHECK_CONF=$PWD/empty.conf "$prefix/sbin/ringside-node-check" --check-config >check-config.txt ||
  fail "ringside-node-check --check-config failed"
grep -qF "nccl_bench: $prefix/bin/nccl_bench" check-config.txt ||
  { cat check-config.txt; fail "ringside-node-check does not find the installed nccl_bench"; }
LD_LIBRARY_PATH="$prefix/lib/ringside/sim" "$prefix/bin/simrun" -n 8 --nodes 2 \
  --cluster "$prefix/share/ringside/scenarios/straggler_gpu.json" --timeout 600 -- \
  "$prefix/bin/ringside" run -o traces -- "$prefix/libexec/ringside/train_example" --steps 40 \
  >run.log 2>&1 || { cat run.log; fail "the traced demo run failed"; }
status=0
"$prefix/bin/ringside" analyze traces >report.txt || status=$?
cat report.txt
[[ $status -eq 1 ]] || fail "analyze exited $status, expected 1 (findings)"
grep -q '\[straggler/gpu\] rank 5 ' report.txt || fail "the slow GPU (rank 5) was not named"

# A consumer of the package.
cmake -S "$src/tests/install/consumer" -B consumer-build -DCMAKE_PREFIX_PATH="$prefix" \
  >consumer.log 2>&1 || { cat consumer.log; fail "find_package(ringside) failed"; }
cmake --build consumer-build >>consumer.log 2>&1 || { cat consumer.log; fail "the consumer did not build"; }
consumer-build/count_ops traces/*.h5 >counts.txt || fail "count_ops failed"
[[ $(grep -c '^rank [0-7]: [1-9][0-9]* ops$' counts.txt) -eq 8 ]] || { cat counts.txt; fail "count_ops: 8 ranks with ops expected"; }

PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --exists ringside || fail "pkg-config does not know ringside"
# shellcheck disable=SC2046
g++ -std=c++20 "$src/tests/install/consumer/count_ops.cpp" -o count_ops_pc \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ringside) || fail "the pkg-config build failed"
./count_ops_pc traces/*.h5 | cmp -s - counts.txt || fail "the pkg-config build reads other counts"
echo "install_test: ok"
