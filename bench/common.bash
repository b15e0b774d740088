# SPDX-License-Identifier: MIT
# Shared by the benchmark scripts (sourced).

# pktgen_pps WHO BIN CPU ARGS...: run uskb-pktgen BIN pinned to CPU, quiet,
# with --json, and print its "pps". When the run fails or reports no rate,
# say so on stderr after "WHO: " and fail.
pktgen_pps() {
	local who=$1 bin=$2 cpu=$3 out pps
	shift 3
	out=$("$bin" -f "$cpu" -q --json "$@") || { echo "$who: uskb-pktgen $* failed" >&2; return 1; }
	pps=$(sed -n 's/.*"pps": \([0-9]*\).*/\1/p' <<<"$out" | head -1)
	[ -n "$pps" ] || { echo "$who: uskb-pktgen $* printed no pps" >&2; return 1; }
	echo "$pps"
}
