#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/*_fuzzer.cpp) and run each for a bounded
# time, one after another (the machine's cores are shared). Prints one line per
# target: executions, exec/s, coverage (cov = edges, ft = features, from
# libFuzzer's final stats), corpus size, crashes. Exits 1 if any target
# crashed or broke an invariant, keeping the input under $OUT/crashes/<name>/.
# See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=scripts/lib.sh
source scripts/lib.sh

usage() {
  cat <<EOF
usage: $(basename "$0") [SECONDS_PER_TARGET] [TARGET...]

  SECONDS_PER_TARGET  fuzzing time for each target (default 30)
  TARGET              names to run (default: all of fuzz/*_fuzzer.cpp), e.g. patch_contract

Environment:
  LAZYAGENT_FUZZ_BUILD=DIR   build directory (default build-fuzz; configured with clang++)
  LAZYAGENT_FUZZ_OUT=DIR     generated corpora, logs and crashes (default DIR/fuzz-out)
  LAZYAGENT_FUZZ_MAX_LEN=N   largest input libFuzzer generates (default 4096 bytes)

Reproduce a crash:  BUILD/NAME_fuzzer OUT/crashes/NAME/crash-...
EOF
}

SECONDS_PER_TARGET=30
if [ $# -gt 0 ]; then
  case "$1" in
    -h|--help) usage; exit 0 ;;
    ''|*[!0-9]*) usage >&2; die "SECONDS_PER_TARGET must be a whole number of seconds, got '$1'" ;;
    *) SECONDS_PER_TARGET="$1"; shift ;;
  esac
fi
[ "$SECONDS_PER_TARGET" -ge 1 ] || die "SECONDS_PER_TARGET must be at least 1"

BUILD="${LAZYAGENT_FUZZ_BUILD:-build-fuzz}"
OUT="${LAZYAGENT_FUZZ_OUT:-$BUILD/fuzz-out}"
MAX_LEN="${LAZYAGENT_FUZZ_MAX_LEN:-4096}"

ALL=()
for f in fuzz/*_fuzzer.cpp; do
  n="$(basename "$f" _fuzzer.cpp)"
  ALL+=("$n")
done
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")
for t in "${TARGETS[@]}"; do
  [ -f "fuzz/${t}_fuzzer.cpp" ] || die "no fuzz target '$t' (have: ${ALL[*]})"
done

command -v clang++ >/dev/null || die "clang++ not found: apt-get install clang libclang-rt-14-dev (scripts/setup.sh)"

# ---- build ----------------------------------------------------------------------
step "build ($BUILD)"
# ccache (CMakeLists.txt) keeps its cache with the set-up's when run as root.
launcher=()
[ "$(id -u)" -ne 0 ] || launcher=(-DLAZYAGENT_CCACHE_DIR="$LAZYAGENT_CACHE_DIR/ccache")
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DLAZYAGENT_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >"$BUILD.configure.log" 2>&1 ||
    { cat "$BUILD.configure.log" >&2; die "cmake configure failed"; }
  rm -f "$BUILD.configure.log"
fi
build_targets=()
for t in "${TARGETS[@]}"; do build_targets+=(--target "${t}_fuzzer"); done
mkdir -p "$OUT/logs"
cmake --build "$BUILD" -j2 "${build_targets[@]}" >"$OUT/logs/build.log" 2>&1 ||
  { tail -40 "$OUT/logs/build.log" >&2; die "build failed (full log: $OUT/logs/build.log)"; }
step_done

# ---- run ------------------------------------------------------------------------
# Crashes of earlier runs stay in $OUT/crashes; only this run's count.
# Final stats: the last status line ("#N DONE cov: C ft: F corp: U/Sb ...") and
# -print_final_stats=1's "stat::number_of_executed_units: N" and
# "stat::average_exec_per_sec: N".
stat() { awk -F': ' -v k="stat::$2" '$1 == k { v = $2 } END { print v + 0 }' "$1"; }
field() { grep -E '^#[0-9]+' "$1" | tail -1 | awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }'; }

failed=()
printf '%-16s %10s %8s %6s %6s %12s %8s\n' target execs exec/s cov ft corpus crashes
for t in "${TARGETS[@]}"; do
  seeds="fuzz/corpus/$t"
  work="$OUT/corpus/$t"
  crashes="$OUT/crashes/$t"
  log="$OUT/logs/$t.log"
  mkdir -p "$work" "$crashes"
  dict=()
  [ -f "fuzz/$t.dict" ] && dict=(-dict="fuzz/$t.dict")
  marker="$OUT/logs/$t.started"
  : >"$marker"
  rc=0
  # New inputs go to $work (the first directory); the seeds are only read.
  # -timeout: one input taking 10 s is a hang and counts as a crash.
  "$BUILD/${t}_fuzzer" "$work" "$seeds" "${dict[@]}" \
    -max_total_time="$SECONDS_PER_TARGET" -max_len="$MAX_LEN" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$crashes/" -print_final_stats=1 >"$log" 2>&1 || rc=$?
  n_crash=$(find "$crashes" -type f -newer "$marker" \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  corpus="$(field "$log" corp:)"
  printf '%-16s %10s %8s %6s %6s %12s %8s\n' "$t" "$(stat "$log" number_of_executed_units)" \
    "$(stat "$log" average_exec_per_sec)" "$(field "$log" cov:)" "$(field "$log" ft:)" "${corpus:-?}" "$n_crash"
  if [ "$rc" -ne 0 ] || [ "$n_crash" -gt 0 ]; then
    failed+=("$t")
    grep -E 'invariant broken|ERROR: |SUMMARY: |runtime error' "$log" | head -5 | sed 's/^/    /' >&2 || true
    find "$crashes" -type f -newer "$marker" | head -3 | sed "s|^|    kept: |" >&2
    info "log: $log; reproduce: $BUILD/${t}_fuzzer <kept input>"
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  die "fuzzing found crashes or broken invariants in: ${failed[*]}"
fi
echo "fuzz: ${#TARGETS[@]} targets, ${SECONDS_PER_TARGET} s each, no crash" >&2
