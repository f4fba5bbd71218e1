#!/usr/bin/env bash
# The body of action.yml: run harness in the chosen mode, post the sticky comment in
# `comment` mode, and exit with harness's own exit code (0 ok, 1 difference, 2 error).
# Inputs arrive as environment variables, never spliced into the script text.
set -uo pipefail

mode="${MODE:-comment}"
repo_path="${REPO_PATH:-.}"
read -ra extra <<< "${EXTRA_ARGS:-}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# `action-run.sh helm-extra`: install harness's `helm` extra when HELM is true, or when it
# is auto and the repo's config enables helm targets (or the extra args ask for --helm).
if [ "${1:-}" = "helm-extra" ]; then
  want="${HELM:-auto}"
  if [ "$want" = "auto" ]; then
    want=false
    for arg in "${extra[@]}"; do
      [ "$arg" = "--helm" ] && want=true
    done
    if [ "$want" = "false" ] && REPO_PATH="$repo_path" python - <<'PY'
import os, sys
from pathlib import Path
from harness.core import config
try:
    cfg = config.load(Path(os.environ["REPO_PATH"]))
except Exception:
    sys.exit(1)
sys.exit(0 if cfg.helm or cfg.helm_targets else 1)
PY
    then
      want=true
    fi
  fi
  if [ "$want" = "true" ]; then
    echo "harness: installing the helm extra"
    python -m pip install --quiet --disable-pip-version-check "$(cd "$here/.." && pwd)[helm]"
  fi
  exit 0
fi

base_ref() {
  local base="${BASE_REF:-}"
  if [ -z "$base" ]; then
    base="HEAD~1"
    echo "::notice title=harness::no base-ref and not a pull request: comparing with HEAD~1" >&2
  fi
  # A shallow checkout may lack the base commit: fetch just that one.
  if ! git -C "$repo_path" cat-file -e "$base^{commit}" 2>/dev/null; then
    git -C "$repo_path" fetch --quiet --no-tags --depth=1 origin "$base" >&2 || true
  fi
  printf '%s' "$base"
}

output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "$1" >> "$GITHUB_OUTPUT"
  fi
}

# The self-contained HTML report, uploaded as an artifact by action.yml.
html=()
if [ "${HTML_REPORT:-true}" = "true" ]; then
  report="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/harness-report/harness-report.html"
  html=(--html "$report")
  output "html-report=$report"
fi

case "$mode" in
  check)
    harness check --repo "$repo_path" --output github "${html[@]}" "${extra[@]}"
    code=$?
    ;;
  diff)
    base="$(base_ref)"
    harness diff --repo "$repo_path" --base "$base" --output github "${html[@]}" "${extra[@]}"
    code=$?
    ;;
  comment)
    base="$(base_ref)"
    out="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/harness-comment"
    harness comment --repo "$repo_path" --base "$base" --split --output-dir "$out" \
      "${html[@]}" "${extra[@]}"
    code=$?
    output "comment-dir=$out"
    if [ "${POST_COMMENT:-true}" = "true" ] && [ -f "$out/comment-part-1.md" ]; then
      if [ -z "${PR_NUMBER:-}" ]; then
        echo "::notice title=harness::not a pull request: comment written to $out, not posted"
      elif ! bash "$here/sticky-comment.sh" "$PR_NUMBER" "$out"; then
        echo "::warning title=harness::could not create or update the PR comment" \
          "(the token needs pull-requests: write; fork PRs get a read-only token)"
      fi
    fi
    ;;
  *)
    echo "::error title=harness::mode must be check, diff or comment, not '$mode'"
    code=2
    ;;
esac

# keep the cache within its cap before actions/cache saves it
if [ -n "${HARNESS_CACHE_DIR:-}" ]; then
  harness cache prune >/dev/null 2>&1 || true
fi

output "exit-code=$code"
exit "$code"
