#!/usr/bin/env bash
# A node behind HAProxy counts each client by its own address
# (--proxy-protocol-from; aggregator/proxy_protocol.h), ctest
# aggregator_proxy. One aggregator on loopback with a join key that locks an
# address out after 2 wrong keys, HAProxy (Debian's, tools/haproxy.sh: it
# connects from 127.0.0.2 with send-proxy-v2) in front, and clients from
# several loopback addresses:
#  - through HAProxy, 127.0.0.3 guesses keys and is locked out; 127.0.0.4
#    still gets in with the key (without the PROXY header both are HAProxy,
#    and the lock-out would lock everyone), 127.0.0.3 does not, and /metrics
#    counts the one address locked;
#  - HAProxy's health checks, PROXY headers of their own, keep the node in;
#  - straight to the node: the balancer's address without a header is
#    answered 400 saying what is missing; any other address's PROXY header
#    is not read (a client cannot lend itself another address);
#  - over TLS: headers sent by hand (Python's ssl) name clients, one locked
#    out and another let in, and a balancer's TLS connection without a
#    header is refused;
#  - no sanitizer report in the nodes' logs once they stop.
#   proxy.sh BUILD_DIR MODEL.gguf WORK_DIR
set -u
build=$1 model=$2 work=$3
aggregator=$build/sdfed-aggregator
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../../tools/port_file.sh"
. "$here/../../../tools/haproxy.sh"
rm -rf "$work" && mkdir -p "$work"
. "$here/../../lib/tally.sh" aggregator_proxy
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  haproxy_stop
}
trap cleanup EXIT
key=the-join-key

/usr/bin/python3 - "$here/protocol_task.json" "$model" >"$work/task.json" <<'PY'
import json, sys
task = json.load(open(sys.argv[1]))
task["model"] = sys.argv[2]
print(json.dumps(task))
PY
start_node() { # start_node NAME [OPTIONS...]: sets $node_port
  local name=$1
  shift
  "$aggregator" --task "$work/task.json" --port 0 --port-file "$work/$name.port" --host 127.0.0.1 \
    --state "$work/$name-state" --join-key "$key" --key-failures 2 --key-lockout 600 \
    --proxy-protocol-from "$haproxy_source" "$@" >"$work/$name.log" 2>&1 &
  pids+=("$!")
  node_port=$(port_file "$work/$name.port" "$!") || { bad "$name did not start: $(tail -n 3 "$work/$name.log")"; return 1; }
}
# get FROM URL [KEY]: "STATUS BODY" of a GET from local address FROM
get() {
  curl -sk --max-time 10 --interface "$1" ${3:+-H "Authorization: Bearer $3"} -w ' %{http_code}' "$2" | tr '\n' ' ' |
    sed 's/^\(.*\) \([0-9]*\)$/\2 \1/'
}
status_of() { get "$@" | cut -d' ' -f1; }

start_node plain || { summary; exit 1; }
haproxy_check="/status?key=$key"
haproxy_start "$work" 127.0.0.1 0 "127.0.0.1:$node_port" || { bad "no HAProxy"; exit 1; }
front=http://127.0.0.1:$haproxy_port

# through HAProxy: 127.0.0.3 guesses, 127.0.0.4 is let in
guesses="$(status_of 127.0.0.3 "$front/task" wrong) $(status_of 127.0.0.3 "$front/task" wrong-again)"
[ "$guesses" = "401 429" ] && ok || bad "two wrong keys through HAProxy: $guesses, not 401 then 429"
[ "$(status_of 127.0.0.4 "$front/task" "$key")" = 200 ] && ok ||
  bad "another client through HAProxy is locked out with the guesser: $(get 127.0.0.4 "$front/task" "$key" | cut -c1-200)"
[ "$(status_of 127.0.0.3 "$front/task" "$key")" = 429 ] && ok || bad "the guesser gets in with the key while locked out"
metrics=$(curl -s --max-time 10 --interface 127.0.0.4 -H "Authorization: Bearer $key" "$front/metrics")
grep -q '^sdfed_addresses_locked 1$' <<<"$metrics" && ok ||
  bad "/metrics does not count one address locked: $(grep addresses <<<"$metrics")"

# HAProxy's health checks (every second, 3 failures take the node out) carry headers of their own: 4 s on, the
# node still answers through it
sleep 4
[ "$(status_of 127.0.0.4 "$front/status" "$key")" = 200 ] && ok ||
  bad "HAProxy took the node out: its health checks fail ($(tail -n 3 "$work/haproxy.log"))"

# straight to the node: the balancer's address must send a header, and no one else's header is read
answer=$(get "$haproxy_source" "http://127.0.0.1:$node_port/status" "$key")
[ "${answer%% *}" = 400 ] && grep -q "no PROXY protocol version 2 header.*--proxy-protocol-from.*send-proxy-v2" <<<"$answer" &&
  ok || bad "the balancer's address without a header: $answer"
[ "$(status_of 127.0.0.5 "http://127.0.0.1:$node_port/status" "$key")" = 200 ] && ok ||
  bad "a client straight to the node is not served"
forged=$(/usr/bin/python3 - "$node_port" "$key" <<'PY'
import socket, struct, sys
# a header from 127.0.0.3 (locked out) claiming 127.0.0.6: not a balancer's, so never read as one
header = b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack(">H", 12) + socket.inet_aton("127.0.0.6") + \
    socket.inet_aton("127.0.0.1") + struct.pack(">HH", 40000, int(sys.argv[1]))
s = socket.socket()
s.bind(("127.0.0.3", 0))
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(header + ("GET /task HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % sys.argv[2]).encode())
s.settimeout(10)
answer = b""
while chunk := s.recv(4096):
    answer += chunk
print(answer.split(b"\r\n")[0].decode())
PY
)
[ "$forged" = "HTTP/1.1 400 Bad Request" ] && ok || bad "a header from a client's address was read: $forged"

# over TLS, headers by hand from the balancer's address
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 -subj /CN=127.0.0.1 \
  >/dev/null 2>&1
if start_node tls --cert "$work/cert.pem" --key "$work/key.pem"; then
  tls=$(/usr/bin/python3 - "$node_port" "$key" "$haproxy_source" <<'PY'
import socket, ssl, struct, sys
port, key, balancer = int(sys.argv[1]), sys.argv[2], sys.argv[3]
context = ssl.create_default_context()
context.check_hostname = False
context.verify_mode = ssl.CERT_NONE
def get(client, path, token, header=True):
    s = socket.socket()
    s.bind((balancer, 0))
    s.connect(("127.0.0.1", port))
    s.settimeout(10)
    if header:
        s.sendall(b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack(">H", 12) + socket.inet_aton(client) +
                  socket.inet_aton("127.0.0.1") + struct.pack(">HH", 40000, port))
    try:
        t = context.wrap_socket(s)
        t.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % (path, token)).encode())
        return t.recv(4096).split(b" ")[1].decode()
    except (ssl.SSLError, OSError, IndexError):
        return "closed"
print(get("198.51.100.7", "/task", "wrong"), get("198.51.100.7", "/task", "wrong"), get("198.51.100.8", "/task", key),
      get("198.51.100.7", "/task", key), get("", "/task", key, header=False))
PY
)
  [ "$tls" = "401 429 200 429 closed" ] && ok ||
    bad "over TLS: $tls, not 401 429 (198.51.100.7 guesses), 200 (198.51.100.8), 429, closed (no header)"
fi
# the nodes stopped as a host stops them: no sanitizer report (the ASan tree runs this too)
for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
reports=$(grep -l "ERROR: [A-Za-z]*Sanitizer\|runtime error:" "$work"/*.log 2>/dev/null)
[ -z "$reports" ] && ok || bad "sanitizer reports in $reports: $(grep -h -A 5 'Sanitizer\|runtime error' $reports | head -n 20)"
summary
[ "$failed" -eq 0 ]
