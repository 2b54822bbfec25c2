#!/usr/bin/env bash
# The example server under wrk (-t2 -c16, keep-alive, loopback), each
# workload as a ratio to a bare net/http handler (./bare) measured in the
# same round, as the hot-paths issue measured it, and creates with an
# Idempotency-Key against creates without. Run from the module root:
#
#     examples/wrk/run.sh            # ROUNDS=3 DURATION=10s THREADS=2 CLIENTS=16
#
# It needs wrk (Debian: apt-get install wrk) and curl. The server and the
# baseline run as processes of their own; wrk shares the machine with them,
# so on 2 cores the ratios are those of the servers' CPU per request more
# than of the Go load benchmark (go test ./httpapi -bench Load), whose
# client's cost is the same on both sides. At the end: the server's RSS.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
CLIENTS=${CLIENTS:-16}
API=127.0.0.1:${API_PORT:-18090}
BARE=127.0.0.1:${BARE_PORT:-18091}

command -v wrk >/dev/null || { echo "wrk is missing (Debian: apt-get install wrk)" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is missing" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/server" ./examples/server
go build -o "$work/bare" ./examples/wrk/bare
mkdir "$work/data"
token=$("$work/server" project create -data "$work/data" acme)

"$work/server" serve -addr "$API" -data "$work/data" -metrics=false >/dev/null 2>"$work/server.log" &
server=$!
pids+=("$server")
"$work/bare" -addr "$BARE" &
pids+=("$!")
for _ in $(seq 100); do
	curl -sf "http://$API/healthz" >/dev/null && curl -s "http://$BARE/" >/dev/null && break
	sleep 0.1
done

auth="Authorization: Bearer $token"
post() { curl -sf -o /dev/null -H "$auth" -H 'Content-Type: application/json' -X POST "http://$API$1" --data-binary "$2"; }
post /projects/acme/table '{"table_name":"items","columns":[{"column_name":"name"},{"column_name":"qty","column_type":"INTEGER"},{"column_name":"price","column_type":"REAL"},{"column_name":"note"}]}'
rows() { # rows FIRST NOTE: a JSON array of 1,000 rows
	awk -v first="$1" -v note="$2" 'BEGIN { printf "["; for (i = first; i < first + 1000; i++) printf "%s{\"name\":\"item %d\",\"qty\":%d,\"price\":1.5,\"note\":\"%s\"}", (i > first ? "," : ""), i, i, note; print "]" }'
}
for first in $(seq 0 1000 9000); do
	rows "$first" seed >"$work/seed.json"
	post /projects/acme/records/items "@$work/seed.json"
done
rows 0 load >"$work/batch.json"

cat >"$work/common.lua" <<EOF
wrk.headers["Authorization"] = "Bearer $token"
wrk.headers["Content-Type"] = "application/json"
-- each workload's requests: one per n, 1, 2, …
function each(make)
	local n = 0
	request = function()
		n = n + 1
		return make(n)
	end
end
EOF
cat >"$work/bare.lua" <<EOF
dofile("$work/common.lua")
EOF
cat >"$work/get_by_id.lua" <<EOF
dofile("$work/common.lua")
each(function(n) return wrk.format("GET", "/projects/acme/records/items/" .. (n % 10000 + 1)) end)
EOF
cat >"$work/query_by_pk.lua" <<EOF
dofile("$work/common.lua")
each(function(n) return wrk.format("POST", "/projects/acme/query", nil, '{"sql":"SELECT * FROM items WHERE id = ?","params":[' .. (n % 10000 + 1) .. ']}') end)
EOF
cat >"$work/create_one.lua" <<EOF
dofile("$work/common.lua")
each(function(n) return wrk.format("POST", "/projects/acme/records/items", nil, '{"name":"new ' .. n .. '","qty":' .. n .. ',"price":2.5,"note":"load"}') end)
EOF
# A new Idempotency-Key for every request. create_one_keyed's grow with
# time, as time-ordered keys do (UUIDv7, ULID, the Go client's own): the
# round's start, the thread's number and the request's make them unique
# across rounds and threads. create_one_keyed_random's are random, shaped
# as UUIDv4s: each lands on a page of the server's key index of its own.
cat >"$work/keyed.lua" <<EOF
dofile("$work/common.lua")
local threads = 0
function setup(thread)
	threads = threads + 1
	thread:set("thread_id", threads)
end
function init()
	math.randomseed(os.time() * 100 + thread_id)
end
function keyed(key)
	each(function(n)
		local headers = {} -- wrk.format takes these instead of wrk.headers
		for k, v in pairs(wrk.headers) do headers[k] = v end
		headers["Idempotency-Key"] = key(n)
		return wrk.format("POST", "/projects/acme/records/items", headers, '{"name":"new ' .. n .. '","qty":' .. n .. ',"price":2.5,"note":"load"}')
	end)
end
EOF
cat >"$work/create_one_keyed.lua" <<EOF
dofile("$work/keyed.lua")
local start = os.time()
keyed(function(n) return string.format("wrk-%d-%d-%012d", start, thread_id, n) end)
EOF
cat >"$work/create_one_keyed_random.lua" <<EOF
dofile("$work/keyed.lua")
local r = math.random
keyed(function(n) return string.format("%08x-%04x-%04x-%04x-%06x%06x", r(0, 0x7fffffff), r(0, 0xffff), r(0, 0xffff), r(0, 0xffff), r(0, 0xffffff), r(0, 0xffffff)) end)
EOF
cat >"$work/batch1000.lua" <<EOF
dofile("$work/common.lua")
local f = assert(io.open("$work/batch.json"))
wrk.method = "POST"
wrk.path = "/projects/acme/records/items"
wrk.body = f:read("*a")
f:close()
EOF

# measure NAME ADDR: "requests/s p99" of one wrk run; non-2xx answers fail it.
measure() {
	local out
	out=$(wrk -t"$THREADS" -c"$CLIENTS" -d"$DURATION" --latency -s "$work/$1.lua" "http://$2/" 2>&1)
	if grep -q "Non-2xx" <<<"$out"; then
		echo "$1: answers other than 2xx:" >&2
		echo "$out" >&2
		exit 1
	fi
	awk '/Requests\/sec/ { rate = $2 } $1 == "99%" { p99 = $2 } END { print rate, p99 }' <<<"$out"
}

printf "%-6s %-24s %12s %10s %9s\n" round workload req/s x_bare p99
for round in $(seq "$ROUNDS"); do
	read -r bare bare_p99 < <(measure bare "$BARE")
	printf "%-6s %-24s %12.0f %10s %9s\n" "$round" bare "$bare" 1 "$bare_p99"
	for w in get_by_id query_by_pk create_one create_one_keyed create_one_keyed_random batch1000; do
		read -r rate p99 < <(measure "$w" "$API")
		if [ "$w" = create_one ]; then
			create=$rate
		fi
		if [ "$w" = create_one_keyed ] || [ "$w" = create_one_keyed_random ]; then
			printf "%-6s %-24s %12.0f %10.2f %9s  (%.2f of create_one)\n" "$round" "$w" "$rate" "$(awk -v r="$rate" -v b="$bare" 'BEGIN { print r / b }')" "$p99" "$(awk -v r="$rate" -v c="$create" 'BEGIN { print r / c }')"
		elif [ "$w" = batch1000 ]; then
			printf "%-6s %-24s %12.0f %10s %9s  (%.0f rows/s)\n" "$round" "$w" "$rate" - "$p99" "$(awk -v r="$rate" 'BEGIN { print r * 1000 }')"
		else
			printf "%-6s %-24s %12.0f %10.2f %9s\n" "$round" "$w" "$rate" "$(awk -v r="$rate" -v b="$bare" 'BEGIN { print r / b }')" "$p99"
		fi
	done
done
grep -E '^Vm(RSS|HWM)' "/proc/$server/status" | tr -s ' \t' ' ' | sed 's/^/server /'
