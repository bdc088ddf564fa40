#!/usr/bin/env bash
# A client written from docs/wire-format.md alone, with amqp-tools (rabbitmq-c 0.11's command-line clients) and a
# running Warren worker. Each step prints one line: a name, a space, and the JSON it received.
#
#   amqp_tools_example.sh [URL] [QUEUE]      defaults: amqp://guest:guest@localhost:5672/%2F and warren.default
#
# ForeignClientTests runs it against the test broker and a Warren worker.
set -euo pipefail
URL=${1:-amqp://guest:guest@localhost:5672/%2F}
QUEUE=${2:-warren.default}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
uuid() { cat /proc/sys/kernel/random/uuid; }
now_us() { date +%s%6N; }

# 1. A job whose result comes to a reply queue (section 3.3). The queue exists before the job names it, so the
#    result waits there until we read it.
JOB=$(uuid)
REPLY=reply-$JOB
amqp-declare-queue -u "$URL" -q "$REPLY" >/dev/null
# Default exchange, routing key = the job queue, JSON, persistent (-p), reply_to (-t) = the reply queue.
amqp-publish -u "$URL" -e '' -r "$QUEUE" -C application/json -p -t "$REPLY" \
    -b "{\"version\":1,\"id\":\"$JOB\",\"type\":\"echo\",\"input\":{\"hello\":\"warren\"},\"sequence\":$(now_us)}"
printf 'echo '
amqp-consume -u "$URL" -q "$REPLY" -c 1 cat
echo
amqp-delete-queue -u "$URL" -q "$REPLY" >/dev/null

# 2. A job that reports progress sends its reports to a reply queue too, and amqp-tools cannot tell them apart by
#    their type. So bind a queue to warren.results with the job id instead: amqp-consume -x -e declares a
#    server-named exclusive queue and binds it. It must be bound before the result goes out.
JOB=$(uuid)
amqp-consume -u "$URL" -e warren.results -r "$JOB" -x -c 1 cat >"$tmp/sum.json" &
sleep 1 # give it time to bind; the job below also takes 1.5 s
amqp-publish -u "$URL" -e '' -r "$QUEUE" -C application/json -p \
    -b "{\"version\":1,\"id\":\"$JOB\",\"type\":\"sum\",\"input\":{\"numbers\":[1,2,3],\"delayMs\":500},\"sequence\":$(now_us)}"
wait
echo "sum $(cat "$tmp/sum.json")"

# 3. A job that waits for another one (section 2, Dependencies). The dependent goes first; the worker parks it until
#    the sleep job has ended.
FIRST=$(uuid)
THEN=$(uuid)
amqp-consume -u "$URL" -e warren.results -r "$THEN" -x -c 1 cat >"$tmp/then.json" &
sleep 1
amqp-publish -u "$URL" -e '' -r "$QUEUE" -C application/json -p \
    -b "{\"version\":1,\"id\":\"$THEN\",\"type\":\"echo\",\"input\":{\"after\":\"$FIRST\"},\"dependencies\":[\"$FIRST\"],\"requireSuccess\":true,\"sequence\":$(now_us)}"
amqp-publish -u "$URL" -e '' -r "$QUEUE" -C application/json -p \
    -b "{\"version\":1,\"id\":\"$FIRST\",\"type\":\"sleep\",\"input\":{\"seconds\":2},\"sequence\":$(now_us)}"
wait
echo "dependent $(cat "$tmp/then.json")"

# 4. Cancelling: publish a long job, then a cancel message to the control exchange (section 4; the routing key does
#    not matter). The job ends cancelled wherever it is.
JOB=$(uuid)
amqp-consume -u "$URL" -e warren.results -r "$JOB" -x -c 1 cat >"$tmp/cancelled.json" &
sleep 1
amqp-publish -u "$URL" -e '' -r "$QUEUE" -C application/json -p \
    -b "{\"version\":1,\"id\":\"$JOB\",\"type\":\"sleep\",\"input\":{\"seconds\":600},\"sequence\":$(now_us)}"
amqp-publish -u "$URL" -e warren.control -C application/json -p \
    -b "{\"version\":1,\"kind\":\"cancel\",\"jobIds\":[\"$JOB\"]}"
wait
echo "cancelled $(cat "$tmp/cancelled.json")"

# 5. Asking the workers for their status (section 4.4). The reply queue must exist before the request goes out, and
#    the request names it in its body's replyTo, not in the AMQP reply_to (amqp-publish -t), with a fresh sentAt.
#    Each worker answers once; collect the answers for 3 s. The -- keeps amqp-consume from reading sh's -c.
REPLY=status-$(uuid)
amqp-declare-queue -u "$URL" -q "$REPLY" >/dev/null
amqp-publish -u "$URL" -e warren.control -C application/json -p \
    -b "{\"version\":1,\"kind\":\"status\",\"replyTo\":\"$REPLY\",\"sentAt\":\"$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\"}"
timeout -s KILL 3 amqp-consume -u "$URL" -q "$REPLY" -- sh -c 'printf "status "; cat; echo' || true
amqp-delete-queue -u "$URL" -q "$REPLY" >/dev/null
