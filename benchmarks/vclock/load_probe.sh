#!/bin/bash
# Bounded probe of the host's load under a fixed speed-up (docs/io-live.md, "Cause, found"):
# `harness run --model MODEL --speedup SPEEDUP` on a cluster `ldp`; every 5 s the load and the
# runnable threads by name (past MAXLOAD/2, what the first 12 runnable threads wait in). Stops by
# itself past a load of MAXLOAD or after SECS s, then kills the run and its containers.
MODEL=${MODEL:-io-aware}; SECS=${SECS:-200}; MAXLOAD=${MAXLOAD:-40}; SPEEDUP=${SPEEDUP:-100}
OUT=$(realpath -m "${1:?usage: load_probe.sh OUT_DIR}")
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
harness run --model $MODEL --speedup $SPEEDUP --name ldp --output "$OUT"/runs --timeout 900 > "$OUT"/run.log 2>&1 &
RUN=$!
t0=$(date +%s)
while kill -0 $RUN 2>/dev/null; do
  sleep 5
  el=$(( $(date +%s) - t0 ))
  load=$(cut -d' ' -f1 /proc/loadavg)
  echo "== t=$el load=$load $(tail -c 150 "$OUT"/run.log | tr '\n\r' '  ' | tail -c 110)" >> "$OUT"/probe.log
  ps -eLo stat=,comm= | awk '$1 ~ /^[RD]/ {c[$2]++; n++} END {printf "  runnable %d:", n; for (k in c) printf " %s=%d", k, c[k]; print ""}' >> "$OUT"/probe.log
  ps -eLo comm= | sort | uniq -c | sort -rn | head -8 | tr '\n' ' ' >> "$OUT"/probe.log; echo >> "$OUT"/probe.log
  if awk "BEGIN{exit !($load > $MAXLOAD/2)}"; then
    for t in $(ps -eLo stat=,pid=,tid=,comm= | awk '$1 ~ /^R/ {print $2"/"$3}' | head -12); do
      p=${t%/*}; i=${t#*/}
      echo "  R $(cat /proc/$p/comm 2>/dev/null)/$(cat /proc/$p/task/$i/comm 2>/dev/null) wchan=$(cat /proc/$p/task/$i/wchan 2>/dev/null) sys=$(cut -d' ' -f1-3 /proc/$p/task/$i/syscall 2>/dev/null)" >> "$OUT"/probe.log
    done
  fi
  if awk "BEGIN{exit !($load > $MAXLOAD)}" || [ $el -gt $SECS ]; then
    echo "== stopping at t=$el load=$load" >> "$OUT"/probe.log
    kill -INT $RUN; sleep 10; kill -9 $RUN 2>/dev/null
    docker ps --format '{{.Names}}' | grep '^ldp' | xargs -r docker kill > /dev/null
    break
  fi
done
docker ps -a --format '{{.Names}}' | grep '^ldp' | xargs -r docker rm -f > /dev/null
echo "== done $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT"/probe.log
