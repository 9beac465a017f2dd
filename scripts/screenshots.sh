#!/usr/bin/env bash
# Full-page screenshots of the run page for the README (docs/img/*-page.png): the quickstart
# and backlog-38k, each under the stampede and the naive preset. Re-run it whenever the page
# changes; it renders fresh runs every time.
#
#   scripts/screenshots.sh            # needs chromium (apt-get install -y chromium);
#                                     # pngquant, when present, shrinks the PNGs ~3x
#
# STAMPEDE_CHROMIUM names the browser when it is not chromium on the PATH; CARGO_TARGET_DIR
# is honoured. Each page is measured first (its full height, in a headless load), then shot
# at 1280 px wide and that height.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

browser="${STAMPEDE_CHROMIUM:-}"
if [ -z "$browser" ]; then
  for name in chromium chromium-browser google-chrome google-chrome-stable; do
    if command -v "$name" >/dev/null 2>&1; then browser="$(command -v "$name")"; break; fi
  done
fi
if [ -z "$browser" ]; then
  echo "error: no chromium on the PATH: apt-get install -y chromium (or set STAMPEDE_CHROMIUM)" >&2
  exit 2
fi

cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$repo/target}/release/stampede"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p docs/img

# Headless chromium with a fresh profile, bounded in time (as root it needs --no-sandbox).
chrome() {
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$work/profile" "$@" 2>/dev/null
}

# shoot NAME SCENARIO [run flags...]: renders the run and writes docs/img/NAME-page.png.
shoot() {
  local name="$1" scenario="$2"
  shift 2
  local dir="$work/$name"
  local code=0
  "$bin" run "scenarios/$scenario.toml" --out "$dir" "$@" >/dev/null || code=$?
  if [ "$code" -gt 1 ]; then
    echo "error: stampede run scenarios/$scenario.toml $* exited $code" >&2
    exit 2
  fi
  # The page's full height at 1280 px, from a copy that writes it into the DOM.
  sed 's#<head>#<head><script>addEventListener("load",function(){setTimeout(function(){var p=document.createElement("pre");p.id="page-height";p.textContent=String(Math.ceil(document.documentElement.scrollHeight));document.body.appendChild(p)},0)})</script>#' \
    "$dir/index.html" >"$dir/measure.html"
  local height
  height="$(chrome --window-size=1280,1000 --virtual-time-budget=5000 --dump-dom \
    "file://$dir/measure.html" | sed -n 's#.*<pre id="page-height">\([0-9]*\)</pre>.*#\1#p')"
  if [ -z "$height" ]; then
    echo "error: could not measure the page of $name" >&2
    exit 2
  fi
  local out="$repo/docs/img/$name-page.png"
  chrome --window-size="1280,$height" --virtual-time-budget=5000 --screenshot="$out" \
    "file://$dir/index.html" >/dev/null
  if command -v pngquant >/dev/null 2>&1; then
    pngquant --quality=60-90 --speed 1 --strip --force --output "$out" "$out"
  fi
  echo "docs/img/$name-page.png: 1280 x $height, $(($(wc -c <"$out") / 1024)) KiB"
}

shoot quickstart-stampede quickstart
shoot quickstart-naive quickstart --set client.preset=naive
shoot backlog-38k-stampede backlog-38k
shoot backlog-38k-naive backlog-38k --set client.preset=naive
