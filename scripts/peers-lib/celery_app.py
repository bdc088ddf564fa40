"""The Celery side of scripts/peers: its app, a no-op task, and a long task to cancel.

The worker runs `celery -A celery_app worker` with this folder on the path and PEERS_BROKER_URL naming the broker.
The measurement makes a client app of its own for each repetition with `make_app`.
"""

import os
import time

from celery import Celery


def make_app(url):
    """A Celery app on the broker at URL, with `peers.noop` and `peers.sleep`."""
    app = Celery("peers", broker=url, backend="rpc://")
    app.conf.update(
        # The job pattern of every side: acknowledged after it ran, results returned as persistent messages.
        task_acks_late=True,
        result_persistent=True,
        # Publishes wait for the broker's confirm, as Warren's and Dramatiq's do here.
        broker_transport_options={"confirm_publish": True},
        broker_connection_retry_on_startup=True,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
    )

    @app.task(name="peers.noop", shared=False)
    def noop(value):
        """Returns its input, as Warren's `echo` does."""
        return value

    @app.task(name="peers.sleep", track_started=True, shared=False)
    def sleep(seconds):
        """Sleeps, to be revoked while it runs; reports STARTED so that the client knows when it runs."""
        time.sleep(seconds)
        return seconds

    return app


app = make_app(os.environ["PEERS_BROKER_URL"])
