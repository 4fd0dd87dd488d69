#!/usr/bin/env bash
# scripts/replay_identity.sh — are `parse --replay` outputs byte-identical across a code change?
#
#   scripts/replay_identity.sh record MANIFEST [BIN]   # before the change: digests of every output file
#   scripts/replay_identity.sh check  MANIFEST [BIN]   # after: the same digests, or a diff and exit 1
#
# The corpus: every sample PDF with its recorded model outputs (samples/*_replay*.json), parsed with
# each extraction version the recording fits (a recording made for one version's requests is refused
# by the other: those runs are skipped the same way in record and check, and the manifest says so).
# Every file written is digested (Markdown, JSON files, crops, layout pictures), so a refactor that
# changes one byte of any MinerU file fails the check. BIN defaults to build/src/cli/mineru-cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?record or check}
manifest=${2:?manifest file}
bin=${3:-build/src/cli/mineru-cpp}
[ -x "$bin" ] || { echo "no binary at $bin (build first)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out="$work/manifest"
: >"$out"
for replay in samples/*_replay*.json; do
  stem=$(basename "$replay" .json)
  pdf="samples/${stem%%_replay*}.pdf"
  [ -f "$pdf" ] || continue
  for version in 0.1 1.2; do
    dir="$work/$stem-$version"
    if ! "$bin" parse --quiet --replay "$replay" --vl-utils "$version" -o "$dir" "$pdf" \
      >"$work/log" 2>&1; then
      echo "$stem $version: refused (the recording does not fit this version)" >>"$out"
      continue
    fi
    (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 sha256sum) |
      sed "s|  \./|  $stem-$version/|" >>"$out"
  done
done

case "$mode" in
  record)
    cp "$out" "$manifest"
    echo "recorded $(grep -c '  ' "$manifest") files to $manifest"
    ;;
  check)
    if diff -u "$manifest" "$out"; then
      echo "identical: $(grep -c '  ' "$manifest") files"
    else
      echo "outputs differ from $manifest (see the diff above)" >&2
      exit 1
    fi
    ;;
  *)
    echo "mode must be record or check" >&2
    exit 2
    ;;
esac
