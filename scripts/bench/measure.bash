# Sourced by the benchmark scripts (not one itself: make bench runs *.sh).
#
# measure CMD… : runs CMD under /usr/bin/time -v, its output to $MEASURE_OUT
# (default $DIR/out); sets SECS (wall), CPU (user + system) and RSS_MB
# (peak).
measure() {
  local log="$DIR/time-$$.log"
  /usr/bin/time -v "$@" >"${MEASURE_OUT:-$DIR/out}" 2>"$log" || { echo "failed: $*" >&2; tail -5 "$log" >&2; return 1; }
  SECS=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$log")
  CPU=$(awk -F': ' '/User time|System time/{s+=$2} END{printf "%.2f", s}' "$log")
  RSS_MB=$(awk -F': ' '/Maximum resident set size/{printf "%.1f", $2/1024}' "$log")
}

# median N CMD… : a warm-up run, then N measured ones (N odd); SECS and CPU
# are the medians, RSS_MB the largest peak.
median() {
  local n=$1 secs=() cpus=() rss=0 i
  shift
  "$@" >/dev/null
  for ((i = 0; i < n; i++)); do
    measure "$@"
    secs+=("$SECS") cpus+=("$CPU")
    rss=$(echo "$RSS_MB $rss" | awk '{print ($1 > $2) ? $1 : $2}')
  done
  SECS=$(printf '%s\n' "${secs[@]}" | sort -g | sed -n "$(((n + 1) / 2))p")
  CPU=$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "$(((n + 1) / 2))p")
  RSS_MB=$rss
}
