# SPDX-License-Identifier: MIT
# uskb-pktgen shim for the kernel's samples/pktgen/functions.sh: the same
# shell functions (pg_ctrl, pg_thread, pg_set, proc_cmd, pgset, parse_addr,
# validate_ports, ...) so that the kernel's pktgen sample scripts run
# unchanged when copied beside this file and parameters.sh, on a kernel
# without pktgen. There is no /proc/net/pktgen: each command is checked at
# once by replaying the commands so far (uskb-pktgen --script --dry-run) and
# "pg_ctrl start" runs them all, then prints every device's status block and
# keeps it, so that the samples' final "cat /proc/net/pktgen/DEV" (a shell
# function here) shows it.
# Written for uskb; the function names and behaviour follow the kernel's.

# -- the program --
if [ -z "$USKB_PKTGEN" ]; then
	_uskb_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	for _c in "$_uskb_here/../../build/tools/uskb-pktgen" "$_uskb_here/../../../bin/uskb-pktgen" \
		"$(command -v uskb-pktgen 2>/dev/null)"; do
		if [ -n "$_c" ] && [ -x "$_c" ]; then USKB_PKTGEN=$_c; break; fi
	done
fi
[ -n "$USKB_PKTGEN" ] || { echo "ERROR: uskb-pktgen not found: build it (make) or set USKB_PKTGEN" >&2; exit 3; }
export USKB_PKTGEN

## -- logging, as the kernel's --
function err() {
	local exitcode=$1
	shift
	echo "ERROR: $@" >&2
	exit $exitcode
}

function warn() {
	echo "WARN : $@" >&2
}

function info() {
	if [[ -n "$VERBOSE" ]]; then
		echo "INFO : $@" >&2
	fi
}

## -- the commands, kept in a script until "pg_ctrl start" --
export PROC_DIR=/proc/net/pktgen # what the samples print; nothing is there

# The script file and the directory that stands in for /proc/net/pktgen
# after a run, made on first use and removed when the shell exits.
function _uskb_script() {
	if [ -z "$USKB_PG_SCRIPT" ]; then
		USKB_PG_SCRIPT=$(mktemp /tmp/uskb-pktgen-script.XXXXXX) || err 4 "cannot create a temporary file"
		USKB_PG_PROC=$(mktemp -d /tmp/uskb-pktgen-proc.XXXXXX) || err 4 "cannot create a temporary directory"
		export USKB_PG_SCRIPT USKB_PG_PROC
		trap 'rm -rf "$USKB_PG_SCRIPT" "$USKB_PG_PROC"' EXIT
	fi
}

# A device's file, as "cat /proc/net/pktgen/DEV" shows it once the run is
# over: "pg_ctrl start" saves each status block under the device's name
# (a "/" in it, as in pcap:/tmp/x.pcap, written as %2F).
function _uskb_save_blocks() {
	awk -v dir="$USKB_PG_PROC" '
		/^Params: / { if (f) close(f); f = "" }
		/^     frags: .* ifname: / && !f { n = $NF; gsub("/", "%2F", n); f = dir "/" n; printf "%s", head > f }
		/^Params: / { head = $0 "\n"; next }
		f && !/^$/ { print > f }'
}

# The samples end with "cat /proc/net/pktgen/$DEV": such reads are served
# from what the run saved; every other cat is the real one.
function cat() {
	local a saved rc=0
	[ $# -gt 0 ] || { command cat; return; }
	for a in "$@"; do
		[[ "$a" == "$PROC_DIR"/* ]] || { command cat "$@"; return; }
	done
	for a in "$@"; do
		saved=${a#"$PROC_DIR"/}
		saved=${USKB_PG_PROC:-}/${saved//\//%2F}
		if [ -n "${USKB_PG_PROC:-}" ] && [ -f "$saved" ]; then
			command cat "$saved"
		else
			echo "cat: $a: No such file or directory" >&2
			rc=1
		fi
	done
	return $rc
}

function pg_ctrl() {
	proc_cmd pgctrl "$@"
}

function pg_thread() {
	local thread=$1
	shift
	proc_cmd "kpktgend_${thread}" "$@"
}

function pg_set() {
	local dev=$1
	shift
	proc_cmd "$dev" "$@"
}

# proc_cmd FILE CMD...: as an echo into /proc/net/pktgen/FILE
function proc_cmd() {
	local file=$1
	shift
	local cmd="$*" status line appended=""
	_uskb_script
	if [[ "$DEBUG" == "yes" ]]; then
		echo "cmd: $cmd > $PROC_DIR/$file"
	fi
	case "$file" in
	pgctrl) line="pg_ctrl $cmd" ;;
	kpktgend_*) line="pg_thread ${file#kpktgend_} $cmd" ;;
	*) line="pg_set $file $cmd" ;;
	esac
	case "$file:$cmd" in
	pgctrl:reset)
		: >"$USKB_PG_SCRIPT"
		return 0
		;;
	pgctrl:stop)
		return 0 # uskb-pktgen stops on SIGINT by itself
		;;
	pgctrl:start)
		{ command cat "$USKB_PG_SCRIPT"; echo "pg_ctrl start"; } |
			"$USKB_PKTGEN" --script - ${USKB_PKTGEN_OPTS} >"$USKB_PG_PROC/.out"
		status=${PIPESTATUS[1]}
		command cat "$USKB_PG_PROC/.out"
		_uskb_save_blocks <"$USKB_PG_PROC/.out"
		;;
	*)
		echo "$line" >>"$USKB_PG_SCRIPT"
		appended=yes
		"$USKB_PKTGEN" --script "$USKB_PG_SCRIPT" --dry-run >/dev/null # its echo of the commands is not ours to print
		status=$?
		;;
	esac
	if ((status != 0)); then
		[ -n "$appended" ] && sed -i '$d' "$USKB_PG_SCRIPT" # keep the script as it was
		err 5 "Write error($status) occurred cmd: \"$cmd > $PROC_DIR/$file\""
	fi
}

# The old pgset, with the device in $PGDEV (a path or a name)
function pgset() {
	pg_set "${PGDEV##*/}" "$1"
}

# The kernel's trap_exit resets pktgen at exit unless APPEND; here the
# script file is removed at exit in any case (there is nothing else to reset)
function trap_exit() {
	_uskb_script
}

## -- general shell tricks --

# No root needed: uskb-pktgen runs as any user on null and pcap devices.
function root_check_run_with_sudo() {
	:
}

# NUMA node of a network interface (0 when unknown, as the kernel's)
function get_iface_node() {
	local node=-1
	[ -r "/sys/class/net/$1/device/numa_node" ] && node=$(<"/sys/class/net/$1/device/numa_node")
	if [[ $node == -1 ]]; then echo 0; else echo $node; fi
}

# IRQs of an interface's queues, from /proc/interrupts; an error, as the
# kernel's, when there are none (null and pcap devices have none)
function get_iface_irqs() {
	local irqs
	irqs=$(grep "$1-.*TxRx" /proc/interrupts 2>/dev/null | cut -f1 -d:)
	[ -z "$irqs" ] && irqs=$(grep "$1" /proc/interrupts 2>/dev/null | cut -f1 -d:)
	[ -z "$irqs" ] && err 3 "Could not find interrupts for $1"
	echo $irqs
}

# The CPUs of a NUMA node (all online CPUs without NUMA information)
function get_node_cpus() {
	local list=/sys/devices/system/node/node$1/cpulist out="" r
	[ -r "$list" ] || list=/sys/devices/system/cpu/online
	for r in $(tr ',' ' ' <"$list"); do
		out="$out $(seq -s ' ' ${r//-/ })"
	done
	echo $out
}

# Address or CIDR range -> "min max" (IPv4 / IPv6)
function parse_addr() {
	"$USKB_PKTGEN" --print-range "$1" || err 5 "Invalid IPv4 address: $1"
}

function parse_addr6() {
	"$USKB_PKTGEN" --print-range "$1" -6 || err 5 "Invalid IPv6 address: $1"
}

function validate_addr() {
	"$USKB_PKTGEN" --print-range "$1" >/dev/null 2>&1 || err 5 "Invalid IPv4 address: $1"
}

function validate_addr6() {
	"$USKB_PKTGEN" --print-range "$1" -6 >/dev/null 2>&1 || err 5 "Invalid IPv6 address: $1"
}

# Port N or range N-M -> "min max"
function parse_ports() {
	local min=${1%%-*} max=${1#*-}
	echo $min $max
}

function validate_ports() {
	if [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ ]] && (($1 > 0 && $1 < 65536 && $2 > 0 && $2 < 65536 && $1 <= $2)); then
		return 0
	fi
	err 5 "Invalid port(s): $1-$2"
}
