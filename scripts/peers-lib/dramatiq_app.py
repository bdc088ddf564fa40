"""The Dramatiq side of scripts/peers: its RabbitMQ broker, a Redis result backend, and a no-op actor.

The worker runs `dramatiq dramatiq_app` with this folder on the path and PEERS_QUEUE set; the measurement imports it
as a client and makes an actor per queue with `noop_actor`. PEERS_BROKER_URL and PEERS_REDIS_URL name the servers.
"""

import os

import dramatiq
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.results import Results
from dramatiq.results.backends import RedisBackend

# Publishes wait for the broker's confirm, as Warren's and Celery's do here.
broker = RabbitmqBroker(url=os.environ["PEERS_BROKER_URL"], confirm_delivery=True)
broker.add_middleware(Results(backend=RedisBackend(url=os.environ["PEERS_REDIS_URL"])))
dramatiq.set_broker(broker)


def noop_actor(queue):
    """The no-op actor of `queue`, returning its input as Warren's `echo` does; named after its queue, since a
    Dramatiq broker takes one actor of a name."""

    def noop(value):
        return value

    return dramatiq.actor(noop, actor_name=f"noop-{queue}", queue_name=queue, store_results=True)


if "PEERS_QUEUE" in os.environ:
    noop = noop_actor(os.environ["PEERS_QUEUE"])
