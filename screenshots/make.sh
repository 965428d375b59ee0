#!/usr/bin/env bash
# Makes every picture in screenshots/ again from the live program, on loopback:
# client, server, agent, help and the m comparison as PNG (cell by cell from a
# terminal emulator's grid, by ../shared/tools/tui-shot), and client.gif, a few
# seconds of a client run.
#
#   screenshots/make.sh            # from the repository's root
#   COLS=160 ROWS=44 screenshots/make.sh
#
# Needs tmux, python3 with pyte and Pillow, fonts-dejavu-core (tui-shot installs them
# when missing). Starts only loopback reflectors of its own and stops them by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
shot=${TUI_SHOT:-../shared/tools/tui-shot}
[ -x "$shot" ] || { echo "make.sh: no tui-shot at $shot (set TUI_SHOT)" >&2; exit 1; }
export COLS=${COLS:-120} ROWS=${ROWS:-36}
cargo build --release --quiet
bin=$PWD/target/release/synapse
out=$PWD/screenshots
state=$(mktemp -d)
export XDG_STATE_HOME=$state XDG_CONFIG_HOME=$state
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$state"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A reflector for the client and the agent, and a STAMP one beside it.
echo_port=$(free_port)
stamp_port=$(free_port)
"$bin" server --no-ui --bind "127.0.0.1:$echo_port" --stamp-port "$stamp_port" >/dev/null &
pids+=($!)
sleep 0.5

echo "client"
"$shot" "$out/client" "$bin client 127.0.0.1:$stamp_port --stamp --interval 1ms" 8

echo "help"
"$shot" "$out/help" "$bin client 127.0.0.1:$echo_port --interval 1ms" 3 '?'

echo "server"
server_port=$(free_port)
# Two clients for the server's table, started once its display is up.
(sleep 2
 "$bin" client "127.0.0.1:$server_port" --no-ui --interval 2ms --duration 6s >/dev/null &
 "$bin" client "127.0.0.1:$server_port" --no-ui --interval 5ms --packets 400 >/dev/null &
 wait) &
pids+=($!)
"$shot" "$out/server" "$bin server --bind 127.0.0.1:$server_port" 6

echo "agent"
metrics_port=$(free_port)
second_port=$(free_port)
"$bin" server --no-ui --bind "127.0.0.1:$second_port" >/dev/null &
pids+=($!)
"$shot" "$out/agent" "$bin agent --name lab --reflect none --metrics-listen 127.0.0.1:$metrics_port \
    --peer near=127.0.0.1:$echo_port --peer far=127.0.0.1:$second_port \
    --peer silent=127.0.0.1:$(free_port) --interval 20ms --report-every 2s" 20

echo "versus (m: what came after against what came before)"
# tui-shot captures 0.7 s after its last key, too soon for a comparison:
# run it in tmux here, press m, wait, and let tui-shot draw the capture.
sess=versus$$
tmux new-session -d -s "$sess" -x "$COLS" -y "$ROWS" \
    "TERM=xterm-256color $bin client 127.0.0.1:$echo_port --interval 1ms; sleep 30"
sleep 6
tmux send-keys -t "$sess" m
sleep 8
tmux capture-pane -t "$sess" -e -p | head -c -1 > "$state/versus.ans"
tmux kill-session -t "$sess"
"$shot" "$out/versus" "cat $state/versus.ans" 1

echo "client.gif"
python3 "$out/gif.py" "$bin client 127.0.0.1:$stamp_port --stamp --interval 1ms" \
    "$out/client.gif" "$shot"

echo "made: $(cd "$out" && ls ./*.png ./*.gif | tr '\n' ' ')"
