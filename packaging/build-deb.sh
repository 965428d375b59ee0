#!/usr/bin/env bash
# Builds target/debian/synapse_VERSION_ARCH.deb with cargo-deb: the binary,
# its man page and shell completions (written by the binary itself), the
# systemd units (assets/systemd, with the packaged binary's path and the
# `synapse` system user that postinst creates), and the example configs.
#
#   packaging/build-deb.sh        (CARGO_DEB=path/to/cargo-deb if not on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
deb=${CARGO_DEB:-$(command -v cargo-deb || echo "${XDG_CACHE_HOME:-$HOME/.cache}/synapse-ci/cargo-deb/bin/cargo-deb")}
[ -x "$deb" ] || { echo "needs cargo-deb (cargo install cargo-deb)" >&2; exit 2; }
cargo build --release --quiet
out=target/deb-assets
rm -rf "$out"; mkdir -p "$out/completions"
bin=target/release/synapse
"$bin" man | gzip -9n > "$out/synapse.1.gz"
"$bin" completions bash > "$out/completions/synapse"
"$bin" completions zsh > "$out/completions/_synapse"
"$bin" completions fish > "$out/completions/synapse.fish"
for unit in assets/systemd/*.service; do
  sed -e 's|/usr/local/bin/synapse|/usr/bin/synapse|' \
      -e 's|^DynamicUser=yes$|User=synapse\nGroup=synapse|' \
      -e 's|^# No account of its own|# The system user the package made|' \
      "$unit" > "$out/$(basename "$unit")"
done
"$deb" --no-build --strip --quiet
ls target/debian/*.deb
