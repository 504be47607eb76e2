#!/usr/bin/env bash
# Make the witnesses of results files' vulnerable verdicts again from their
# records and ship them beside each file, so that `lenspec results check`
# replays them from a clone (docs/runs/README.md):
#
#   scripts/ship-witnesses.sh docs/runs/verify-rnn/verify-batched-rnn.jsonl …
#
# Each file's vulnerable units are verified again with their own recorded
# model, data and settings (`lenspec results check --rederive`, into
# $WITNESS_WORK, default runs/witnesses; a rerun resumes there), checked,
# and their witnesses packed as STEM.witnesses.tar.gz beside STEM.jsonl
# (safetensors only; sorted, zero times and owners, so the archive is the
# same bytes whoever packs the same witnesses). Exit status 1 if a record
# disagrees with its replay (its archive is still written: the check shows
# the disagreement), 2 for a usage error.
set -uo pipefail
bin=${BIN:-bin/lenspec}
work=${WITNESS_WORK:-runs/witnesses}
if [[ $# -eq 0 ]]; then
  echo "usage: scripts/ship-witnesses.sh RESULTS.jsonl..." >&2
  exit 2
fi
status=0
for f in "$@"; do
  stem=$(basename "${f%.*}")
  "$bin" results check --rederive "$work" "$f"
  rc=$?
  case $rc in
    0) ;;
    1) status=1 ;;
    *) exit "$rc" ;;
  esac
  if compgen -G "$work/$stem.witnesses/*.safetensors" >/dev/null; then
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --exclude='*.png' \
      -C "$work" -cf - "$stem.witnesses" | gzip -9n >"$(dirname "$f")/$stem.witnesses.tar.gz" || exit 1
    echo "$(dirname "$f")/$stem.witnesses.tar.gz: $(ls "$work/$stem.witnesses" | grep -c '\.safetensors$') witnesses, $(stat -c %s "$(dirname "$f")/$stem.witnesses.tar.gz") bytes"
  fi
done
exit $status
