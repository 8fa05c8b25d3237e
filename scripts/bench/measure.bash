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

# ratio A B : A / B to one decimal, "inf" when B is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b > 0) printf "%.1f", a / b; else print "inf" }'; }

# A size sweep: `summary+=(LINE)` collects its verdicts and `track_rss N MB`
# the peak RSS at each size; print_summary prints the lines and how far the
# peak RSS moved from the first size to the last (the target: within 10%,
# memory flat as queues grow).
summary=()
first_rss="" first_n="" last_rss="" last_n=""
track_rss() {
  [ -n "$first_rss" ] || { first_rss=$2; first_n=$1; }
  last_rss=$2 last_n=$1
}
print_summary() {
  echo
  echo "summary:"
  for l in "${summary[@]}"; do echo "  $l"; done
  if [ "$first_n" != "$last_n" ]; then
    local change verdict
    change=$(awk -v a="$first_rss" -v b="$last_rss" 'BEGIN{printf "%+.1f", (b - a) / a * 100}')
    verdict=$(awk -v c="$change" 'BEGIN{print (c <= 10 && c >= -10) ? "ok" : "MISSED"}')
    echo "  dlq peak RSS: $first_rss MB at $first_n messages, $last_rss MB at $last_n: ${change}% (target within 10%): $verdict"
  fi
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
