#!/bin/bash
# usage: docs/bench/window20.sh N ROUNDS BIN[:none]...   (e.g. 60000 5 /tmp/oncemq-before /tmp/oncemq-after)
# Each round runs every BIN (oncemq --sync always, or --sync none with ":none") and mosquitto once, in an
# order rotated from round to round; each run: a fresh data directory and port, an online durable
# subscriber (`mosquitto_sub -q 1 -c -C N`), then `seq N | mosquitto_pub -l -q 1 -M 20`, timed from the
# start of the publisher until the subscriber has every message. mosquitto: listener, allow_anonymous,
# max_queued_messages 0 (its default of 1000 drops messages the subscriber has not taken yet), no
# persistence. Ratios are to mosquitto's time in the same round.
N=$1; ROUNDS=$2; shift 2
tmp=$(mktemp -d); trap "rm -rf $tmp" EXIT
port=$((20000 + RANDOM % 20000))
waitport() { for k in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.05; done; }
timed() { # port -> "total pub got"
  mosquitto_sub -q 1 -c -i sub1 -t t -p $1 -C $N -W 120 >$tmp/sub.out &
  local sp=$!
  sleep 0.5
  local s=$(date +%s.%N)
  seq $N | mosquitto_pub -l -q 1 -t t -p $1 -M 20 -i pub1
  local pe=$(date +%s.%N)
  wait $sp
  local e=$(date +%s.%N)
  printf "%.2f %.2f %d" $(echo "$e - $s" | bc) $(echo "$pe - $s" | bc) $(wc -l <$tmp/sub.out)
}
items=("$@" mosquitto)
for r in $(seq $ROUNDS); do
  declare -A T=(); declare -A INFO=()
  n=${#items[@]}
  for k in $(seq 0 $((n-1))); do
    b=${items[$(( (k + r) % n ))]}
    port=$((port+3)); p=$port; hp=$((p+1))
    if [[ $b == mosquitto ]]; then
      printf 'listener %d 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\n' $p >$tmp/mosq.conf
      mosquitto -c $tmp/mosq.conf >/dev/null 2>&1 &
      pid=$!; waitport $p
      read tot pub got <<<"$(timed $p)"
      kill $pid; wait $pid 2>/dev/null
      T[$b]=$tot; INFO[$b]="${tot}s got $got"
      continue
    fi
    bin=${b%%:*}; mode=always; [[ $b == *:none ]] && mode=none
    d=$(mktemp -d $tmp/data.XXXX)
    $bin serve --listen 127.0.0.1:$p --data $d --sync $mode --log-level warn --http-listen 127.0.0.1:$hp >$d/log 2>&1 &
    pid=$!; waitport $p
    read tot pub got <<<"$(timed $p)"
    m=$(curl -s 127.0.0.1:$hp/metrics)
    commits=$(grep '^oncemq_store_commits_total' <<<"$m" | awk '{print $2}')
    dsum=$(grep '^oncemq_store_commit_duration_seconds_sum' <<<"$m" | awk '{print $2}')
    kill $pid; wait $pid 2>/dev/null; rm -rf $d
    T[$b]=$tot
    INFO[$b]="${tot}s got $got, $commits commits, $(echo "scale=1; $N/$commits" | bc) msg/commit, mean commit $(echo "scale=3; $dsum*1000/$commits" | bc) ms"
  done
  line="round $r ($(cut -d' ' -f1 /proc/loadavg)):"
  for b in "${items[@]}"; do
    [[ $b == mosquitto ]] && line="$line | mosquitto ${INFO[$b]}" || line="$line | $(basename $b) ${INFO[$b]} = $(echo "scale=2; ${T[$b]}/${T[mosquitto]}" | bc)x"
  done
  echo "$line"
done
