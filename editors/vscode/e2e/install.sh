#!/usr/bin/env bash
# Installs what tests/editors/test_vscode_e2e.py drives: code-server (VS Code in the browser, from
# npm) and playwright-core, into editors/vscode/e2e/node_modules. Needs Debian's nodejs 20
# (code-server 4.100.3 requires Node 20), libkrb5-dev (its kerberos module builds from
# source), ripgrep and chromium (the browser; playwright-core never downloads one):
#   apt-get install -y libkrb5-dev ripgrep chromium
# code-server's @vscode/ripgrep post-install downloads a ripgrep binary; this machine cannot,
# so Debian's rg is pre-placed in the download cache it looks in first.
set -euo pipefail
cd "$(dirname "$0")"
RG=$(command -v rg) || { echo "install.sh: ripgrep (rg) is missing: apt-get install ripgrep" >&2; exit 1; }
# @vscode/ripgrep 1.15.11 (code-server 4.100.3's shrinkwrap) wants release v13.0.0-10
case "$(uname -m)" in
  x86_64) target=x86_64-unknown-linux-musl ;;
  aarch64|arm64) target=aarch64-unknown-linux-musl ;;
  *) echo "install.sh: no ripgrep target for $(uname -m)" >&2; exit 1 ;;
esac
export TMPDIR="${TMPDIR:-/tmp}"
cache="$TMPDIR/vscode-ripgrep-cache-1.15.11"
mkdir -p "$cache"
stage=$(mktemp -d)
cp "$RG" "$stage/rg"
tar czf "$cache/ripgrep-v13.0.0-10-$target.tar.gz" -C "$stage" rg
rm -rf "$stage"
# native modules build against the installed Node's headers (no download of them)
if [ -f /usr/include/node/node.h ]; then export npm_config_nodedir=/usr; fi
# code-server's post-install refuses to run as root without this
export npm_config_unsafe_perm=true
# npm 11.16+ runs a dependency's install scripts only when allowed, and refuses a list of
# them (allow-scripts) in the nested `npm install` that code-server's post-install runs in its
# lib/vscode; the pinned code-server and its shrinkwrapped native modules build as they do
# under npm 10, which runs them all by default (and ignores this setting)
export npm_config_dangerously_allow_all_scripts=true
# node-pty's post-install runs `npx node-gyp ...`: let npx fetch node-gyp without asking
export npm_config_yes=true
npm ci --no-audit --no-fund
test -x node_modules/.bin/code-server
node_modules/.bin/code-server --version
