"""A client that is not Warren's: with only docs/wire-format.md, it publishes a job (section 2) naming a queue of
its own as reply queue, receives the job's progress reports and result there (3.3, 3.6) and finds the result again
in the results stream, among the result batches the workers append there (3.7). Then it publishes a job that
depends on the first and adds its sum (2, Dependencies), and receives that job's result. Prints one JSON object per
line: {"result": ..., "progress": N}, then {"stored": ..., "offset": N}, then {"dependent": ...}.

    python3 pika_client.py URL QUEUE
"""
import json
import sys
import uuid
from datetime import datetime, timedelta, timezone

import pika

url, queue = sys.argv[1], sys.argv[2]
conn = pika.BlockingConnection(pika.URLParameters(url))
ch = conn.channel()
ch.confirm_delivery()

# Topology, as in section 1.
ch.exchange_declare("warren.dead", "fanout", durable=True)
ch.queue_declare("warren.dead", durable=True)
ch.queue_bind("warren.dead", "warren.dead", routing_key="")
# The job queue exists (the test's worker made it): use it as it is. Declared only if missing.
probe = conn.channel()
try:
    probe.queue_declare(queue, passive=True)
    probe.close()
except pika.exceptions.ChannelClosedByBroker:
    ch.queue_declare(queue, durable=True, arguments={"x-dead-letter-exchange": "warren.dead"})
ch.exchange_declare("warren.results", "topic", durable=True)
ch.queue_declare("warren.results", durable=True, arguments={
    "x-queue-type": "stream", "x-max-age": "7D", "x-max-length-bytes": 2000000000})

# Section 3.3: a queue of our own, named in the job's reply_to.
job_id = str(uuid.uuid4())
reply = ch.queue_declare("", exclusive=True).method.queue  # gone with the connection; kept between consumers

now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
descriptor = {"version": 1, "id": job_id, "type": "sum", "input": {"numbers": [1, 2, 3]}, "priority": "high",
              "sequence": 42, "key": "pika-totals", "createdAt": now}
ch.basic_publish("", queue, json.dumps(descriptor).encode(), pika.BasicProperties(
    content_type="application/json", delivery_mode=2, priority=4, message_id=job_id, type="sum", reply_to=reply))


def result_of(wanted):
    """The result of job `wanted` from the reply queue, and how many progress reports came before it."""
    progress = 0
    for method, props, body in ch.consume(reply, auto_ack=True, inactivity_timeout=30):
        if method is None:
            sys.exit("no result within 30 s")
        if props.type == "warren.progress":
            assert props.correlation_id == wanted and json.loads(body)["jobId"] == wanted
            progress += 1
            continue
        ch.cancel()
        return json.loads(body), props, progress


result, props, progress = result_of(job_id)
print(json.dumps({"result": result, "correlationId": props.correlation_id, "type": props.type,
                  "progress": progress}))

# Section 3.7: the stream keeps it too, in a result batch. Start a minute back (a timestamp offset).
ch.basic_qos(prefetch_count=500)
since = datetime.now(timezone.utc) - timedelta(minutes=1)
for method, props, body in ch.consume("warren.results", arguments={"x-stream-offset": since},
                                      inactivity_timeout=5):
    if method is None:
        sys.exit("the result is not in the warren.results stream")
    ch.basic_ack(method.delivery_tag)
    message = json.loads(body)
    batch = message["results"] if props.type == "warren.result.batch" else [message]
    found = [result for result in batch if result.get("jobId") == job_id]
    if found:
        print(json.dumps({"stored": found[0], "offset": props.headers["x-stream-offset"], "type": props.type}))
        break
ch.cancel()

# Section 2, Dependencies: a job that waits for the first and adds its sum to its own numbers.
dependent_id = str(uuid.uuid4())
descriptor = {"version": 1, "id": dependent_id, "type": "sum", "input": {"numbers": [10], "addDependencySums": True},
              "sequence": 43, "dependencies": [job_id], "requireSuccess": True}
ch.basic_publish("", queue, json.dumps(descriptor).encode(), pika.BasicProperties(
    content_type="application/json", delivery_mode=2, message_id=dependent_id, reply_to=reply))
print(json.dumps({"dependent": result_of(dependent_id)[0]}))
conn.close()
