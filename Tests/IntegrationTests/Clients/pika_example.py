"""A client written from docs/wire-format.md alone: it declares the topology (section 1), asks the workers for
their status (4.4), enqueues three jobs, one depending on another (2), cancels one (4), and reads the results from
its reply queue (3.3) and from the results stream (3.7). Prints one line per worker, then one per result.

    python3 pika_example.py [URL]

ForeignClientTests runs it against the test broker and a Warren worker.
"""
import json, sys, time, uuid
from datetime import datetime, timezone
import pika

PRIORITY = {"veryLow": 1, "low": 2, "normal": 3, "high": 4, "veryHigh": 5}

url = sys.argv[1] if len(sys.argv) > 1 else "amqp://guest:guest@localhost:5672/%2F"
conn = pika.BlockingConnection(pika.URLParameters(url))
ch = conn.channel()
ch.confirm_delivery()  # basic_publish now waits for the broker's confirm

# Topology, exactly as in section 1 (idempotent).
def declare_if_missing(queue, arguments):
    """Uses the queue as it exists (a quorum queue, say, that a --quorum-queues worker made); declares it only if
    missing (section 1)."""
    probe = conn.channel()  # the broker closes this channel if the queue is missing
    try:
        probe.queue_declare(queue, passive=True)
        probe.close()
    except pika.exceptions.ChannelClosedByBroker:
        ch.queue_declare(queue, durable=True, arguments=arguments)

def declare_job_queue(queue, priorities=False):
    arguments = {"x-dead-letter-exchange": "warren.dead"}
    if priorities:
        arguments["x-max-priority"] = 5
    declare_if_missing(queue, arguments)

def declare_stream(name, arguments, exchange=None):
    """Declares a stream, and binds it to `exchange` with key "", on a channel of its own: right after a broker
    restart RabbitMQ refuses the declaration with 404 and closes the channel, so try again for up to 15 s (4.1)."""
    wait, deadline = 0.05, time.monotonic() + 15
    while True:
        declaring = conn.channel()
        try:
            declaring.queue_declare(name, durable=True, arguments=arguments)
            if exchange is not None:
                declaring.queue_bind(name, exchange, routing_key="")
            declaring.close()
            return
        except pika.exceptions.ChannelClosedByBroker as error:
            if error.reply_code != 404 or time.monotonic() > deadline:
                raise
            time.sleep(wait)
            wait = min(wait * 2, 1)

ch.exchange_declare("warren.dead", "fanout", durable=True)
declare_if_missing("warren.dead", {})
ch.queue_bind("warren.dead", "warren.dead", routing_key="")
declare_job_queue("warren.default")
ch.exchange_declare("warren.results", "topic", durable=True)
declare_stream("warren.results", {"x-queue-type": "stream", "x-max-age": "7D", "x-max-length-bytes": 2000000000})
ch.exchange_declare("warren.control", "fanout", durable=True)
declare_stream("warren.control", {"x-queue-type": "stream", "x-max-age": "1D"}, exchange="warren.control")

def enqueue(type_, input_, priority="normal", key=None, queue="warren.default",
            dependencies=None, require_success=False, max_attempts=None):
    job_id = str(uuid.uuid4())
    descriptor = {"version": 1, "id": job_id, "type": type_, "input": input_, "priority": priority,
                  "sequence": time.time_ns() // 1000, "createdAt": datetime.now(timezone.utc).isoformat()}
    if key is not None:
        descriptor["key"] = key
    if dependencies:
        descriptor["dependencies"] = dependencies
        descriptor["requireSuccess"] = require_success
    if max_attempts is not None:
        descriptor["maxAttempts"] = max_attempts
    ch.basic_publish("", queue, json.dumps(descriptor).encode(), pika.BasicProperties(
        content_type="application/json", delivery_mode=2, priority=PRIORITY[priority],
        message_id=job_id, type=type_, reply_to=reply_queue),  # results and progress come to reply_queue
        mandatory=True)  # raises UnroutableError if no queue
    return job_id

def control(message):
    message = {"version": 1, "sentAt": datetime.now(timezone.utc).isoformat(), **message}
    ch.basic_publish("warren.control", "", json.dumps(message).encode(),
                     pika.BasicProperties(content_type="application/json", delivery_mode=2))

def cancel(job_ids):
    control({"kind": "cancel", "jobIds": job_ids, "reason": "requested"})

def status(wait=2):
    """Asks every live worker for its status (section 4.4); returns the replies by worker id."""
    queue = ch.queue_declare("", exclusive=True, auto_delete=True).method.queue  # BEFORE the request
    control({"kind": "status", "replyTo": queue})
    statuses = {}
    for method, props, body in ch.consume(queue, auto_ack=True, inactivity_timeout=wait):
        if method is None:
            break
        reply = json.loads(body)
        statuses[reply["workerId"]] = reply
    ch.cancel()
    return statuses

def results(timeout=30):
    """Yields results as they arrive; skips progress reports, duplicates and stale results (section 6)."""
    seen, newest = set(), {}
    for method, props, body in ch.consume(reply_queue, auto_ack=True, inactivity_timeout=timeout):
        if method is None:
            return
        if props.type == "warren.progress":
            continue
        result = json.loads(body)
        if result["jobId"] in seen:
            continue
        seen.add(result["jobId"])
        key = result.get("key")
        if key is not None:
            if newest.get(key, -1) > result["sequence"]:
                continue
            newest[key] = result["sequence"]
        yield result

def stored_results(since="first", idle=1):
    """Yields the results the warren.results stream keeps (section 3.7), with their offsets, oldest first."""
    ch.basic_qos(prefetch_count=500)  # stream consumers must have a prefetch
    for method, props, body in ch.consume("warren.results", arguments={"x-stream-offset": since},
                                          inactivity_timeout=idle):
        if method is None:
            break
        ch.basic_ack(method.delivery_tag)  # grants more deliveries; removes nothing
        message = json.loads(body)
        batch = message["results"] if props.type == "warren.result.batch" else [message]
        for result in batch:
            yield props.headers["x-stream-offset"], result
    ch.cancel()

reply_queue = ch.queue_declare("", exclusive=True, auto_delete=True).method.queue  # before any job names it

for worker, reply in status().items():
    print(worker, reply["queues"], reply["localQueues"], reply["totals"])
slow = enqueue("sleep", {"seconds": 30})
fast = enqueue("sum", {"numbers": [1, 2, 3]}, priority="high")
after = enqueue("echo", {"after": fast}, dependencies=[fast], require_success=True)
cancel([slow])
pending = {slow, fast, after}
for result in results():
    print(result["jobId"], result["status"], result.get("output") or result.get("error") or result.get("cancellation"))
    pending.discard(result["jobId"])
    if not pending:
        break
ch.cancel()

ours = {slow, fast, after}
stored = [offset for offset, result in stored_results() if result["jobId"] in ours]
print("stored results of these jobs:", len(stored))
conn.close()
