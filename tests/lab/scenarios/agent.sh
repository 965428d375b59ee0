# Two agents, one in each host, probing each other every 10 ms (A over
# STAMP, B plain echo), scraped every second by a real Prometheus in A.
# The forward leg (A's sending end) delays UDP 30 ms and, once both agents
# are probing (their warm-up probe, which no counter counts, is long
# answered), drops 10 % of it; scrapes (TCP) pass beside netem. The loss is
# then lifted and, once every probe in flight is settled, the agents' lost
# counters are compared with what netem dropped, in datagrams: netem counts
# a drop per packet, and the agent's echo reflector answers requests that
# queued up together in one GSO packet of several datagrams. The filter's
# action counts datagrams (a GSO packet's segments); once the agents are
# stopped and netem's queue is empty, what it passed to netem less what
# netem sent on is what netem dropped.
pair
tc -n "$NS_A" qdisc add dev va root handle 1: prio bands 2 \
  priomap 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
tc -n "$NS_A" qdisc add dev va parent 1:2 handle 20: netem delay 30ms
tc -n "$NS_A" filter add dev va parent 1: protocol ip prio 1 u32 \
  match ip protocol 17 0xff flowid 1:2 action pass
told netem_fwd_udp "delay 30ms loss 10%"
told mu_ns 30000000
told loss 0.10
ip netns exec "$NS_B" "$SYNAPSE" agent --no-ui --name b --reflect "$B_ADDR:8080" \
  --stamp-port 8862 --peer "a=$A_ADDR:8080" --interval 10ms --timeout 1s \
  --metrics-listen 127.0.0.1:9862 >"$OUT/agent-b.txt" 2>"$OUT/agent-b.err" &
AGENT_B=$!
LAB_PIDS+=($!)
ip netns exec "$NS_A" "$SYNAPSE" agent --no-ui --name a --reflect "$A_ADDR:8080" \
  --stamp-port 8862 --peer "b=$B_ADDR:8862" --stamp --interval 10ms --timeout 1s \
  --metrics-listen 127.0.0.1:9862 >"$OUT/agent-a.txt" 2>"$OUT/agent-a.err" &
AGENT_A=$!
LAB_PIDS+=($!)
# B's metrics reach A's Prometheus through a forwarded port in B.
prom="$(mktemp -d)"
cat >"$prom/prometheus.yml" <<EOT
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: synapse
    static_configs:
      - targets: ['127.0.0.1:9862', '$B_ADDR:9863']
EOT
ip netns exec "$NS_B" socat TCP-LISTEN:9863,bind="$B_ADDR",fork,reuseaddr \
  TCP:127.0.0.1:9862 2>"$OUT/socat.err" &
LAB_PIDS+=($!)
ip netns exec "$NS_A" prometheus --config.file="$prom/prometheus.yml" \
  --storage.tsdb.path="$prom/data" --web.listen-address=127.0.0.1:9090 \
  --enable-feature=native-histograms >"$OUT/prometheus.log" 2>&1 &
LAB_PIDS+=($!)
q() {
  ip netns exec "$NS_A" curl -sf 127.0.0.1:9090/api/v1/query --data-urlencode "query=$2" \
    >"$OUT/$1.json"
}
deadline=$(($(date +%s) + 90))
until ip netns exec "$NS_A" curl -sf 127.0.0.1:9090/-/ready >/dev/null; do
  [ "$(date +%s)" -lt "$deadline" ] || { log "Prometheus never ready"; exit 1; }
  sleep 0.5
done
now prometheus_ready
tc -n "$NS_A" qdisc change dev va parent 1:2 handle 20: netem delay 30ms loss 10%
now loss_from
sleep 20
now impaired_until
W=15s
q p50 "histogram_quantile(0.5, sum by (source) (rate(synapse_rtt_seconds[$W])))"
q p99 "histogram_quantile(0.99, sum by (source) (rate(synapse_rtt_seconds[$W])))"
q loss_ratio "sum by (source) (increase(synapse_probes_lost_total[$W])) / sum by (source) (increase(synapse_probes_sent_total[$W]))"
q samples "sum by (source) (increase(synapse_probes_sent_total[$W]))"
tc -n "$NS_A" qdisc change dev va parent 1:2 handle 20: netem delay 30ms
now lifted
snapshot lifted
# Every probe sent before the lift is settled within its timeout (1 s by
# default), then scraped.
sleep 4
snapshot settled
# The queries below read the last scrape; under emulation a scrape can
# lag its second by seconds, so wait for one taken after the snapshot
# (once, a scrape from before it missed the last drop: 435 against 436).
settled=$(date +%s)
scraped() {
  ip netns exec "$NS_A" curl -sf 127.0.0.1:9090/api/v1/query \
    --data-urlencode 'query=min(timestamp(synapse_probes_lost_total))' |
    python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(int(float(r[0]["value"][1])) if r else 0)'
}
deadline=$(($(date +%s) + 30))
until [ "$(scraped)" -gt "$settled" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { log "no scrape after the settled snapshot"; exit 1; }
  sleep 0.5
done
q lost_total "sum by (source) (synapse_probes_lost_total)"
q sent_total "sum by (source) (synapse_probes_sent_total)"
q late_total "sum by (source) (synapse_probes_late_total)"
ip netns exec "$NS_A" curl -sf 127.0.0.1:9862/metrics >"$OUT/metrics-a.txt"
ip netns exec "$NS_B" curl -sf 127.0.0.1:9862/metrics >"$OUT/metrics-b.txt"
kill -INT "$AGENT_A" "$AGENT_B"
wait "$AGENT_A" "$AGENT_B" || true
# Nothing else is UDP: netem's queue empties within its delay.
sleep 1
snapshot quiet
tc -n "$NS_A" -s -j filter show dev va parent 1: >"$OUT/filter-quiet-a.json"
