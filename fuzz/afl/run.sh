#!/usr/bin/env bash
# Coverage-guided fuzzing of every target with AFL++ (cargo-afl, stable toolchain).
#   fuzz/afl/run.sh [SECONDS_PER_TARGET] [TARGET...]
# Installs cargo-afl if missing (it builds AFL++ from the crate's bundled source: cc and make
# only), builds the instrumented binary, seeds each target from the repository's own files and
# its regression inputs, fuzzes, prints each target's coverage, and copies every crash into
# fuzz/regressions/<target>/ (minimised), where the test suite replays it. Exits 1 on a crash.
set -euo pipefail
AFL_VERSION=0.18.2
SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(arguments migration evidence trailer envelope front-matter contract)
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work="${THEURIAN_AFL_WORK:-$repo/target/afl}"
mkdir -p "$work"

if ! cargo afl --version 2>/dev/null | grep -q "$AFL_VERSION"; then
  cargo install cargo-afl --locked --version "$AFL_VERSION" --force
fi
release=$(rustc -vV | awk '/^release:/{r=$2} /^commit-hash:/{h=substr($2,1,7)} END{print "rustc-" r "-" h}')
if [ ! -x "${XDG_DATA_HOME:-$HOME/.local/share}/afl.rs/$release/afl.rs-$AFL_VERSION/afl/bin/afl-fuzz" ]; then
  cargo afl config --build --force
fi
(cd "$here" && CARGO_TARGET_DIR="$work/build" cargo afl build --release)
binary="$work/build/release/theurian-afl"

seed() { # target → seed directory
  local target=$1 dir="$work/seeds/$1"
  rm -rf "$dir"; mkdir -p "$dir"
  local project="$repo/cli/demo/project/.theurian"
  case $target in
    migration) cp "$project"/migrations/*.yaml "$dir"/ ;;
    evidence) find "$project/review" -name '*.json' -exec cp {} "$dir"/ \; ;;
    trailer) cp "$repo"/cli/demo/history/*.txt "$dir"/ ;;
    envelope)
      printf '%s' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"knowledge.search","arguments":{"projectId":"p","query":"retry"}}}' > "$dir/call.json"
      printf '%s' '{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}' > "$dir/init.json" ;;
    arguments)
      # The first byte picks the tool; the rest is its arguments.
      printf '\001%s' '{"projectId":"p","query":"retry budget","limit":5}' > "$dir/search.bin"
      printf '\004%s' '{"projectId":"p","reviewer":"security","severity":"LOW","limit":20}' > "$dir/findings.bin"
      printf '\000%s' '{"projectId":"p","itemId":"architecture.a-b"}' > "$dir/get.bin" ;;
    front-matter)
      # Concepts as `okf export` writes them.
      find "$repo/tests/fixtures/okf-reference" -name '*.md' ! -name 'index.md' -exec cp {} "$dir"/ \; ;;
    contract)
      # Pairs of schemas (old NUL new): the tools' own, and each against the next.
      i=0; prev=""
      for f in "$repo"/schemas/mcp/*.json; do
        [ -n "$prev" ] && { cat "$prev"; printf '\000'; cat "$f"; } > "$dir/pair$i.bin"
        prev=$f; i=$((i+1))
      done ;;
  esac
  if [ -d "$repo/fuzz/regressions/$target" ]; then
    find "$repo/fuzz/regressions/$target" -type f ! -name '.*' -exec cp {} "$dir"/ \;
  fi
  echo "$dir"
}

found=0
for target in "${TARGETS[@]}"; do
  seeds=$(seed "$target")
  out="$work/out/$target"
  mkdir -p "$work/out"
  rm -rf "$out"
  THEURIAN_FUZZ_TARGET=$target AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 \
    AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
    cargo afl fuzz -i "$seeds" -o "$out" -V "$SECONDS_PER_TARGET" "$binary" > "$work/$target.log" 2>&1 || true
  stats="$out/default/fuzzer_stats"
  if [ ! -f "$stats" ]; then
    echo "$target: afl-fuzz did not run; see $work/$target.log" >&2
    exit 2
  fi
  echo "== $target"
  grep -E '^(run_time|execs_done|execs_per_sec|corpus_count|bitmap_cvg|edges_found|total_edges|saved_crashes|saved_hangs)' "$stats"
  # afl-fuzz exits 0 even after a crash: the stats are the verdict.
  for crash in "$out"/default/crashes/id:*; do
    [ -e "$crash" ] || continue
    found=1
    mkdir -p "$repo/fuzz/regressions/$target"
    name="afl-$(sha256sum "$crash" | cut -c1-16)"
    THEURIAN_FUZZ_TARGET=$target cargo afl tmin -i "$crash" -o "$repo/fuzz/regressions/$target/$name" "$binary" > /dev/null 2>&1 \
      || cp "$crash" "$repo/fuzz/regressions/$target/$name"
    echo "$target: crash kept as fuzz/regressions/$target/$name"
  done
done
exit $found
