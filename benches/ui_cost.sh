#!/usr/bin/env bash
# What the live display costs the measurement: loopback p50/p99 RTT with the
# TUI drawing (in a 120x36 tmux terminal, 30 fps) versus --no-ui, alternating
# A B A B in one run. Usage: benches/ui_cost.sh [ROUNDS] [PACKETS] [EXTRA FLAGS...]
set -euo pipefail
rounds=${1:-5}; packets=${2:-30000}; shift 2 2>/dev/null || shift $#
extra=("$@")
cd "$(dirname "$0")/.."
bin=$(readlink -f "${SYNAPSE_BIN:-target/release/synapse}") # tmux runs it from its own directory
command -v tmux >/dev/null || { echo "needs tmux" >&2; exit 1; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT

us() { # "P50:   73.3 µs" / "1.25 ms" / "850 ns" -> microseconds
  awk -v v="$1" -v u="$2" 'BEGIN { f = (u == "ms") ? 1000 : (u == "ns") ? 0.001 : 1; printf "%.2f", v * f }'
}

headless() {
  "$bin" --no-ui --packets "$packets" --threshold 1s "${extra[@]}" > "$dir/a.txt"
  local p50 p99
  p50=$(awk '/^  P50:/ {print $2, $3}' "$dir/a.txt"); p99=$(awk '/^  P99:/ {print $2, $3}' "$dir/a.txt")
  echo "$(us $p50) $(us $p99)"
}

tui() {
  local s=uicost$$
  tmux new-session -d -s "$s" -x 120 -y 36 \
    "TERM=xterm-256color $bin --packets $packets --threshold 1s ${extra[*]}; sleep 30"
  # stdout must stay a terminal (else Synapse runs headless), so the summary
  # printed on quit is read back from the pane. Press q once the run is complete.
  for _ in $(seq 1 600); do
    tmux capture-pane -p -t "$s" | grep -q "run complete" && break
    sleep 0.2
  done
  tmux send-keys -t "$s" q
  for _ in $(seq 1 100); do
    tmux capture-pane -p -S -200 -t "$s" > "$dir/b.txt"
    grep -q "PASS\|FAIL" "$dir/b.txt" && break
    sleep 0.1
  done
  tmux kill-session -t "$s"
  local p50 p99
  p50=$(awk '/^  P50:/ {print $2, $3}' "$dir/b.txt"); p99=$(awk '/^  P99:/ {print $2, $3}' "$dir/b.txt")
  echo "$(us $p50) $(us $p99)"
}

echo "UI cost: $rounds rounds x $packets packets, loopback ${extra[*]}"
printf "%-6s %14s %14s %14s %14s\n" round "no-ui p50" "no-ui p99" "tui p50" "tui p99"
a50=(); b50=(); a99=(); b99=()
for r in $(seq 1 "$rounds"); do
  read -r x50 x99 < <(headless)
  read -r y50 y99 < <(tui)
  printf "%-6s %11s µs %11s µs %11s µs %11s µs\n" "$r" "$x50" "$x99" "$y50" "$y99"
  a50+=("$x50"); a99+=("$x99"); b50+=("$y50"); b99+=("$y99")
done
median() { printf "%s\n" "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
m_a50=$(median "${a50[@]}"); m_b50=$(median "${b50[@]}"); m_a99=$(median "${a99[@]}"); m_b99=$(median "${b99[@]}")
printf "median %11s µs %11s µs %11s µs %11s µs\n" "$m_a50" "$m_a99" "$m_b50" "$m_b99"
awk -v a="$m_a50" -v b="$m_b50" -v c="$m_a99" -v d="$m_b99" 'BEGIN { printf "ratio tui/no-ui: p50 %.3f  p99 %.3f\n", b / a, d / c }'
# Machine-readable (benches/run-all.sh): result MODE P50_NS P99_NS ROUNDS,
# a line a round in round order (report.py pairs them).
for i in "${!a50[@]}"; do
  awk -v a="${a50[$i]}" -v c="${a99[$i]}" -v r="$rounds" 'BEGIN { printf "result noui %.0f %.0f %d\n", a * 1000, c * 1000, r }'
done
for i in "${!b50[@]}"; do
  awk -v b="${b50[$i]}" -v d="${b99[$i]}" -v r="$rounds" 'BEGIN { printf "result tui %.0f %.0f %d\n", b * 1000, d * 1000, r }'
done
