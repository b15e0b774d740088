# SPDX-License-Identifier: MIT
# Sourced by the shell tests (test/net-common.bash sources it for the
# root-only network tests): failures counted, JSON numbers, a receiver
# started and waited for, and a precondition checked once.
#   source "$(dirname "$0")/common.bash"

# failures are counted and each said: bad "what went wrong"; the test ends with [ $fail = 0 ]
fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
# json_num KEY JSON: the first number under KEY
json_num() { sed -n "s/.*\"$1\": \\([0-9]*\\).*/\\1/p" <<<"$2" | head -1; }

# start_rx ERRFILE CMD...: start a receiver (CMD, an uskb-pktgen --rx without
# -q) in the background, its stderr in ERRFILE, emptied first so that no
# earlier receiver's line answers wait_rx; $! is its pid. The caller's own
# redirections (its stdout) go with it.
start_rx() {
	local err=$1
	shift
	: >"$err"
	"$@" 2>"$err" &
}

# wait_rx ERRFILE PID: wait (20 s at most) until the receiver PID, started
# by start_rx, says it receives; 1 if it ended or never said so. A slow
# start (a sanitizer's build) must not meet a change the test makes to its
# interface.
wait_rx() {
	for _ in $(seq 200); do
		grep -q "receiving on" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# What a uskb tool says when the kernel or the build refuses a feature,
# rather than when it goes wrong: a kernel policy (EPERM even to root), a
# kernel too old, a build without the library.
REFUSED='refused by this kernel|does not run XDP live frames|io_uring has no send_zc|built without|this build has no|Address family not supported'

# need WHAT CMD...: a precondition every later case shares, tried once (CMD,
# 30 s at most). When it fails the test stops here, not case after case:
# exit 77 when CMD's output names a refusal ($REFUSED), its last line
# "skipped: WHAT: " and that line; otherwise exit 1, saying that the rest
# was not tried.
need() {
	local what=$1 out rc
	shift
	out=$(timeout -k 5 30 "$@" 2>&1 >/dev/null)
	rc=$?
	[ $rc = 0 ] && return 0
	if grep -qE "$REFUSED" <<<"$out"; then
		echo "$out"
		echo "skipped: $what: $(grep -E "$REFUSED" <<<"$out" | head -1)"
		exit 77
	fi
	echo "FAIL: $what: exit $rc: $out"
	echo "stopped: every later case needs $what"
	exit 1
}

# wait_within SECS PID: wait for PID (a child of the test) to end, SECS at
# most, then kill it (-9); returns its exit status (137 when killed)
wait_within() {
	for _ in $(seq $(($1 * 10))); do
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$2" 2>/dev/null
	wait "$2"
}

# counter_wait FILE KEY N PID...: wait (60 s at most) until the last line of
# FILE (a tool's JSON stats, one line a period) has KEY at N or more; 1 at
# once when one of the PIDs has ended, or after 60 s
counter_wait() {
	local file=$1 key=$2 n=$3 c
	shift 3
	for _ in $(seq 600); do
		c=$(json_num "$key" "$(tail -n 1 "$file")")
		[ -n "$c" ] && [ "$c" -ge "$n" ] && return 0
		for pid; do kill -0 "$pid" 2>/dev/null || return 1; done
		sleep 0.1
	done
	return 1
}

# testpmd_start OUT SOCKET ARG...: DPDK's testpmd as a vhost-user guest
# (virtio-user on SOCKET; ARG: its forwarding options), its output in
# OUT.out, $tpp its pid. Its stdin is a pipe the test holds, so it runs
# until testpmd_stop presses Enter, however long its start takes on a
# loaded machine: the test waits on counters, not on time. (stdbuf: its
# lines reach OUT.out as it prints them, "Press enter to exit" among them.)
testpmd_start() {
	local out=$1 sock=$2
	shift 2
	rm -f "$out.in"
	mkfifo "$out.in"
	timeout -k 5 120 stdbuf -oL dpdk-testpmd --no-huge -m 512 --no-pci --no-telemetry \
		--file-prefix "uskb$(basename "$out")$$" -l 0-1 --vdev "net_virtio_user0,path=$sock,queues=1" -- \
		--nb-cores=1 --total-num-mbufs=16384 "$@" <"$out.in" >"$out.out" 2>&1 &
	tpp=$!
	exec {tpin}>"$out.in"
}
# testpmd_stop: Enter, then its exit status
testpmd_stop() {
	# (in a subshell: a testpmd that is gone already leaves the pipe without a reader, and
	# the SIGPIPE must not end the test before it says why)
	(echo >&"$tpin") 2>/dev/null
	exec {tpin}>&-
	wait $tpp
}
