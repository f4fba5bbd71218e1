#!/usr/bin/env bash
# Create or update harness's sticky pull-request comment(s) with the gh CLI.
#
#   sticky-comment.sh PR_NUMBER DIR
#
# One comment per DIR/comment-part-N.md (as `harness comment --output-dir DIR` writes them).
# Existing comments are found by the hidden marker each part ends with
# (`<!-- ID -->` or `<!-- ID part=N/M -->`): part N updates the comment that held part N,
# missing parts are created, and comments holding parts beyond the new count (or duplicates)
# are deleted. Comments without the marker are never touched.
# Needs GITHUB_REPOSITORY and a token gh can use (GH_TOKEN) with pull-requests: write.
set -euo pipefail

pr="${1:?usage: sticky-comment.sh PR_NUMBER DIR}"
dir="${2:?usage: sticky-comment.sh PR_NUMBER DIR}"
repo="${GITHUB_REPOSITORY:?GITHUB_REPOSITORY is not set}"

count=0
while [ -f "$dir/comment-part-$((count + 1)).md" ]; do
  count=$((count + 1))
done
if [ "$count" -eq 0 ]; then
  echo "sticky-comment: no $dir/comment-part-1.md" >&2
  exit 1
fi

# The marker id, from the last marker in part 1: `<!-- harness:comment part=1/3 -->`.
marker=$(grep -oE '<!-- [A-Za-z0-9][A-Za-z0-9:._/-]*( part=[0-9]+/[0-9]+)? -->' \
  "$dir/comment-part-1.md" | tail -n 1 || true)
if [ -z "$marker" ]; then
  echo "sticky-comment: $dir/comment-part-1.md has no harness marker" >&2
  exit 1
fi
id=${marker#<!-- }
id=${id%% *}

declare -A by_part=()
stale=()
while IFS=$'\t' read -r cid b64; do
  [ -n "$cid" ] || continue
  body=$(printf '%s' "$b64" | base64 -d)
  if [[ "$body" == *"<!-- $id -->"* ]]; then
    n=1
  elif [[ "$body" == *"<!-- $id part="* ]]; then
    rest=${body##*"<!-- $id part="}
    n=${rest%%/*}
  else
    continue
  fi
  if ! [[ "$n" =~ ^[0-9]+$ ]] || [ -n "${by_part[$n]:-}" ]; then
    stale+=("$cid")
  else
    by_part[$n]=$cid
  fi
done < <(gh api --paginate "repos/$repo/issues/$pr/comments" \
  --jq '.[] | [(.id | tostring), (.body | @base64)] | @tsv')

for n in $(seq 1 "$count"); do
  file="$dir/comment-part-$n.md"
  if [ -n "${by_part[$n]:-}" ]; then
    gh api --silent -X PATCH "repos/$repo/issues/comments/${by_part[$n]}" -F "body=@$file"
    echo "updated comment ${by_part[$n]} (part $n/$count)"
    unset "by_part[$n]"
  else
    gh api --silent -X POST "repos/$repo/issues/$pr/comments" -F "body=@$file"
    echo "created comment (part $n/$count)"
  fi
done

for n in "${!by_part[@]}"; do
  stale+=("${by_part[$n]}")
done
for cid in "${stale[@]}"; do
  gh api --silent -X DELETE "repos/$repo/issues/comments/$cid"
  echo "deleted stale comment $cid"
done
