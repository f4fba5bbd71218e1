#!/usr/bin/env bash
# The release check (.ci/run runs it): build the sdist and the wheel of `flux-harness` the way
# a release would (`python -m build`, in an isolated build environment), `twine check` them,
# then install the wheel by its name into a fresh virtualenv and run the `harness` it gives on
# the bundled example. Needs `build` and `twine` (the test extra) in the running Python.
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
  cat "$work/build.log"
  exit 1
}
python -m twine check --strict "$work"/dist/*

wheel=("$work"/dist/flux_harness-*.whl)
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${wheel[0]}" \
  2> >(grep -v '^WARNING: Location' >&2)
version="$("$work/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("flux-harness"))')"
said="$("$work/venv/bin/harness" --version)"
if [ "$said" != "harness $version" ]; then
  echo "check-dist: harness --version says '$said', the wheel is $version" >&2
  exit 1
fi
# the installed command renders the example (kubectl from the wheel's own dependency)
# (into a file, then grep: `| grep -q` exits at its first match, and under pipefail the
# SIGPIPE harness then gets while still writing failed the check about one run in three)
"$work/venv/bin/harness" render --repo examples/homelab --quiet --no-cache --no-helm platform/cilium \
  >"$work/render.out"
grep -q '^kind: HelmRelease' "$work/render.out" || {
  echo "check-dist: the installed harness did not render examples/homelab" >&2
  exit 1
}
echo "check-dist: ${wheel[0]##*/} installs and runs (harness $version)"
