"""A unique job from pika, with only docs/wire-format.md §2, *Unique jobs*: take the key's lock, publish the job, find the lock
held, then free once the job's result came. Prints one JSON line: {"first", "second", "status", "third", "holder"}.

Usage: pika_unique.py URL QUEUE KEY
"""
import json
import sys
import time
import uuid

import pika

url, queue, key = sys.argv[1:4]
connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
channel.confirm_delivery()
lock = "warren.unique." + key
arguments = {"x-max-length": 1, "x-overflow": "reject-publish", "x-expires": 691200000}


def take(job_id):
    """Takes the lock for job_id for a minute: True, or False while another job holds it."""
    channel.queue_declare(lock, durable=True, arguments=arguments)
    properties = pika.BasicProperties(message_id=job_id, expiration="60000", delivery_mode=2)
    try:
        channel.basic_publish("", lock, job_id.encode(), properties, mandatory=True)
        return True
    except pika.exceptions.NackError:
        return False
    except pika.exceptions.UnroutableError:  # a worker deleted the free lock's queue meanwhile
        return take(job_id)


reply = channel.queue_declare("", exclusive=True).method.queue
first = str(uuid.uuid4())
out = {"first": take(first)}
# A keyed job carries a sequence (§6): one of 0 would fall under any `cancel --all` of the past day.
job = {"version": 1, "id": first, "type": "sleep", "input": {"seconds": 1}, "key": key, "unique": True,
       "sequence": time.time_ns() // 1000}
channel.basic_publish(
    "", queue, json.dumps(job).encode(),
    pika.BasicProperties(content_type="application/json", delivery_mode=2, reply_to=reply, message_id=first))
out["second"] = take(str(uuid.uuid4()))
for method, properties, body in channel.consume(reply, inactivity_timeout=30):
    if method is None:
        break
    channel.basic_ack(method.delivery_tag)
    if (properties.type or "").startswith("warren.result."):
        out["status"] = json.loads(body)["status"]
        break
channel.cancel()
third = str(uuid.uuid4())
out["third"] = take(third)
method, properties, body = channel.basic_get(lock)
out["holder"] = properties.message_id == third if method else None
if method:
    channel.basic_ack(method.delivery_tag)
connection.close()
print(json.dumps(out))
