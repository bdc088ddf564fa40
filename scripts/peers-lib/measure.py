"""The measurements of scripts/peers, run in its private virtual environment.

    python measure.py CONFIG.json OUT.json

CONFIG (written by scripts/peers) names the broker, Redis, the Warren executable, the sides and the sizes. OUT gets
each side's figures per repetition and the versions of the libraries. Progress goes to stderr.
"""

import json
import math
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from importlib import metadata

import pika
import redis

LIB = os.path.dirname(os.path.abspath(__file__))
PAYLOAD = {"bench": True}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def log(message):
    print(f"peers: {message}", file=sys.stderr, flush=True)


def parameters(url):
    """Connection parameters for a client of the measurement, without heartbeats: it idles while other sides run."""
    result = pika.URLParameters(url)
    result.heartbeat = 0
    return result


def percentile(fraction, samples):
    """The nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


# The worker's processes, read from /proc.


def processes():
    """Every process's parent and CPU time in clock ticks (user and system, with its waited-for children's)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), sum(int(value) for value in fields[11:15]))
    return table


def process_tree(root, table):
    """ROOT and every process below it."""
    children = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def cpu_seconds(*roots):
    """CPU time of each root's process tree, from one reading of /proc."""
    table = processes()
    return [sum(table[pid][1] for pid in process_tree(root, table) if pid in table) / CLOCK_TICKS
            for root in roots]


def memory_mb(root):
    """RSS and PSS of ROOT's tree, in MB. PSS shares the pages forked processes share among them."""
    rss = pss = 0
    for pid in process_tree(root, processes()):
        for path, field in ((f"/proc/{pid}/status", "VmRSS:"), (f"/proc/{pid}/smaps_rollup", "Pss:")):
            try:
                with open(path) as file:
                    kilobytes = next((int(line.split()[1]) for line in file if line.startswith(field)), 0)
            except OSError:
                continue
            if field == "VmRSS:":
                rss += kilobytes
            else:
                pss += kilobytes
    return rss / 1024, pss / 1024


class Worker:
    """A worker process in a session of its own, stopped with SIGTERM (SIGKILL after 30 s)."""

    def __init__(self, name, command, env, work):
        self.log_path = os.path.join(work, f"{name}.log")
        self.log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            command, env={**os.environ, **env}, cwd=LIB, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.process.pid

    def check(self):
        if self.process.poll() is not None:
            raise RuntimeError(f"the worker exited with {self.process.returncode}; see {self.log_path}")

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                log(f"worker {self.pid} ignored SIGTERM for 30 s; killing it")
                os.killpg(self.pid, signal.SIGKILL)
                self.process.wait()
        else:
            # Its session may still hold children (prefork pools, Dramatiq's workers).
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.log.close()


class Broker:
    """What every side needs of RabbitMQ: a connection for counting and purging queues."""

    def __init__(self, url):
        self.url = url
        self.connection = pika.BlockingConnection(parameters(url))
        self.channel = self.connection.channel()

    def count(self, queue):
        return self.channel.queue_declare(queue, passive=True).method.message_count

    def purge(self, queue):
        """Purges QUEUE if it exists."""
        probe = self.connection.channel()
        try:
            probe.queue_purge(queue)
            probe.close()
        except pika.exceptions.ChannelClosedByBroker:
            pass


# The sides. Each fills a queue, starts a worker on it, counts the results stored, and times round trips and
# cancellations with its own client.


class Warren:
    name = "warren"

    def __init__(self, config, broker):
        self.config, self.broker = config, broker
        self.connection = pika.BlockingConnection(parameters(config["url"]))
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()
        self.arrivals = None

    def prepare(self, queue):
        self.queue, self.results = queue, f"{queue}-results"
        # As a Warren worker declares a job queue; the results queue durable, as Celery's rpc:// reply queue is.
        self.channel.queue_declare(queue, durable=True, arguments={"x-dead-letter-exchange": "warren.dead"})
        self.channel.queue_declare(self.results, durable=True)

    def publish(self, job_type, body_input, job_id):
        body = {"version": 1, "id": job_id, "type": job_type, "input": body_input,
                "createdAt": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
        properties = pika.BasicProperties(content_type="application/json", delivery_mode=2, reply_to=self.results,
                                          message_id=job_id, type=job_type, app_id="warren")
        self.channel.basic_publish("", self.queue, json.dumps(body), properties)

    def fill(self, count):
        for _ in range(count):
            self.publish("echo", PAYLOAD, str(uuid.uuid4()))

    def start_worker(self):
        command = [self.config["warren"], "worker", "--url", self.config["url"], "--queue", self.queue,
                   "--width", str(self.config["concurrency"]), "--prefetch", str(self.config["prefetch"]),
                   "--log-level", "error"]
        return Worker(self.name, command, {"WARREN_STATE_DIR": os.path.join(self.config["work"], "state")},
                      self.config["work"])

    def result_count(self):
        return self.broker.count(self.results)

    def reset_results(self):
        self.broker.purge(self.results)

    def await_message(self, job_id, kind):
        """The next message of JOB_ID whose AMQP type starts with KIND, from the results queue."""
        if self.arrivals is None:
            self.arrivals = self.channel.consume(self.results, auto_ack=True, inactivity_timeout=30)
        for method, properties, body in self.arrivals:
            if method is None:
                raise RuntimeError(f"no {kind} message for job {job_id} in 30 s")
            if properties.correlation_id == job_id and (properties.type or "").startswith(kind):
                return json.loads(body)

    def round_trip(self):
        job_id = str(uuid.uuid4())
        start = time.perf_counter()
        self.publish("echo", PAYLOAD, job_id)
        self.await_message(job_id, "warren.result")
        return time.perf_counter() - start

    def cancellation(self):
        """From the control message `warren cancel` sends to the `cancelled` result of an executing `sum`."""
        job_id = str(uuid.uuid4())
        # Sleeps 1 ms before each number and checks for cancellation around it: 5 s in all.
        self.publish("sum", {"numbers": [1] * 5000, "delayMs": 1}, job_id)
        self.await_message(job_id, "warren.progress")  # its first report: it runs
        time.sleep(random.uniform(0, 0.002))  # a random phase against its 1 ms checks
        message = {"version": 1, "kind": "cancel", "jobIds": [job_id], "reason": "requested",
                   "sentAt": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
        start = time.perf_counter()
        self.channel.basic_publish("warren.control", "", json.dumps(message), pika.BasicProperties(
            content_type="application/json", delivery_mode=2))
        result = self.await_message(job_id, "warren.result")
        elapsed = time.perf_counter() - start
        if result["status"] != "cancelled" or "startedAt" not in result.get("timings", {}):
            raise RuntimeError(f"job {job_id} ended {result['status']}, not cancelled while executing")
        return elapsed

    def finish(self):
        if self.arrivals is not None:
            self.channel.cancel()
            self.arrivals = None
        self.channel.queue_delete(self.results)
        self.channel.queue_delete(self.queue)

    @staticmethod
    def versions(config):
        version = subprocess.run([config["warren"], "--version"], capture_output=True, text=True).stdout.strip()
        return {"warren": version, "pika": metadata.version("pika")}


class Started(Exception):
    """Raised from a result callback to stop waiting once a Celery task has started."""


class Celery:
    name = "celery"

    def __init__(self, config, broker):
        import celery_app

        self.config, self.broker, self.module = config, broker, celery_app
        self.client = None

    def prepare(self, queue):
        self.queue = queue
        # A client of its own: its result consumer, once started by a round trip, would take the next drain's results.
        self.client = self.module.make_app(self.config["url"])
        self.client.conf.broker_heartbeat = 0  # idle while the other sides run
        self.noop, self.sleep = self.client.tasks["peers.noop"], self.client.tasks["peers.sleep"]
        # The rpc:// backend's reply queue: the client's own, named after the app and thread.
        self.results = self.client.backend.oid

    def fill(self, count):
        for _ in range(count):
            self.noop.apply_async(args=[PAYLOAD], queue=self.queue)

    def start_worker(self):
        celery = os.path.join(os.path.dirname(sys.executable), "celery")
        # prefetch = concurrency × multiplier
        command = [celery, "-A", "celery_app", "worker", "--pool", "prefork",
                   "--concurrency", str(self.config["concurrency"]),
                   "--prefetch-multiplier", str(self.config["prefetch"] // self.config["concurrency"]),
                   "-Q", self.queue, "-n", f"{self.queue}@%h", "--without-gossip", "--without-mingle",
                   "--without-heartbeat", "--loglevel", "WARNING"]
        return Worker(self.name, command, {"PEERS_BROKER_URL": self.config["url"]}, self.config["work"])

    def result_count(self):
        return self.broker.count(self.results)

    def reset_results(self):
        self.broker.purge(self.results)

    def round_trip(self):
        start = time.perf_counter()
        self.noop.apply_async(args=[PAYLOAD], queue=self.queue).get(timeout=30)
        return time.perf_counter() - start

    def cancellation(self):
        """From `revoke(terminate=True)` to the REVOKED result of an executing task."""
        result = self.sleep.apply_async(args=[60], queue=self.queue)

        def on_message(meta):
            if meta["status"] == "STARTED":
                raise Started

        try:
            result.get(timeout=30, on_message=on_message, propagate=False)
            raise RuntimeError(f"task {result.id} ended {result.state} before it was revoked")
        except Started:
            pass
        time.sleep(random.uniform(0, 0.002))
        start = time.perf_counter()
        self.client.control.revoke(result.id, terminate=True)
        result.get(timeout=30, propagate=False)
        elapsed = time.perf_counter() - start
        if result.state != "REVOKED":
            raise RuntimeError(f"task {result.id} ended {result.state}, not REVOKED")
        return elapsed

    def finish(self):
        try:
            self.client.backend.result_consumer.stop()
        except AttributeError:
            pass  # no round trip started it
        self.client.close()
        self.broker.channel.queue_delete(self.results)
        self.broker.channel.queue_delete(self.queue)

    @staticmethod
    def versions(config):
        return {name: metadata.version(name) for name in ("celery", "kombu", "billiard", "amqp")}


class Dramatiq:
    name = "dramatiq"

    def __init__(self, config, broker):
        import dramatiq_app

        self.config, self.broker, self.app = config, broker, dramatiq_app
        dramatiq_app.broker.parameters.heartbeat = 0  # idle while the other sides run
        self.redis = redis.Redis.from_url(config["redis"])

    def prepare(self, queue):
        self.queue = queue
        self.actor = self.app.noop_actor(queue)

    def fill(self, count):
        for _ in range(count):
            self.actor.send(PAYLOAD)

    def start_worker(self):
        dramatiq = os.path.join(os.path.dirname(sys.executable), "dramatiq")
        processes = self.config["concurrency"]
        command = [dramatiq, "dramatiq_app", "--processes", str(processes), "--threads", "1", "--queues", self.queue]
        env = {"PEERS_BROKER_URL": self.config["url"], "PEERS_REDIS_URL": self.config["redis"],
               "PEERS_QUEUE": self.queue,
               # Each process consumes with its own prefetch: together they hold as many jobs as the others.
               "dramatiq_queue_prefetch": str(self.config["prefetch"] // processes)}
        return Worker(self.name, command, env, self.config["work"])

    def result_count(self):
        return self.redis.dbsize()

    def reset_results(self):
        self.redis.flushdb()

    def round_trip(self):
        start = time.perf_counter()
        self.actor.send(PAYLOAD).get_result(block=True, timeout=30_000)
        return time.perf_counter() - start

    cancellation = None  # Dramatiq cannot cancel an executing job.

    def finish(self):
        for name in (self.queue, f"{self.queue}.DQ", f"{self.queue}.XQ"):
            self.broker.channel.queue_delete(name)

    @staticmethod
    def versions(config):
        return {"dramatiq": metadata.version("dramatiq"), "pika": metadata.version("pika"),
                "redis-py": metadata.version("redis")}


SIDES = {side.name: side for side in (Celery, Dramatiq, Warren)}


def drain(side, worker, started, config):
    """Times the results of a worker started on a full queue, from the first to the last; CPU over that window.

    Start-up, from STARTED to its first result, is a figure of its own."""
    jobs, timeout = config["jobs"], 120 + config["jobs"] / 20
    deadline = started + timeout
    roots = (worker.pid, config["rabbitmqPid"], config["redisPid"])
    first = None
    while True:
        done = side.result_count()
        now = time.perf_counter()
        if first is None and done > 0:
            first = (now, done, *cpu_seconds(*roots))
        if done >= jobs:
            last = (now, done, *cpu_seconds(*roots))
            break
        worker.check()
        if now > deadline:
            raise RuntimeError(f"{side.name}: {done} of {jobs} results after {timeout:.0f} s")
        time.sleep(config["poll"])
    counted = last[1] - first[1]
    if counted < jobs / 2:
        raise RuntimeError(f"{side.name}: only {counted} of {jobs} jobs ended after the first result; more --jobs")
    window = last[0] - first[0]
    figures = {
        "drain": counted / window,
        "startUp": (first[0] - started) * 1000,
        "workerCPU": (last[2] - first[2]) / counted * 1e6,
        "brokerCPU": (last[3] - first[3]) / counted * 1e6,
    }
    if side.name == "dramatiq":
        figures["redisCPU"] = (last[4] - first[4]) / counted * 1e6
    return figures


def repetition(side, config, number):
    side.prepare(f"peers-{side.name}-{number}-{uuid.uuid4().hex[:8]}")
    log(f"repetition {number}, {side.name}: draining {config['jobs']} jobs")
    side.reset_results()
    side.fill(config["jobs"])
    started = time.perf_counter()
    worker = side.start_worker()
    try:
        figures = drain(side, worker, started, config)
        time.sleep(1)  # the last acks, and rest
        figures["rss"], figures["pss"] = memory_mb(worker.pid)
        side.reset_results()
        log(f"repetition {number}, {side.name}: {config['roundTrips']} round trips")
        samples = []
        for index in range(config["warmUp"] + config["roundTrips"]):
            elapsed = side.round_trip()
            if index >= config["warmUp"]:
                samples.append(elapsed * 1000)
        figures["roundTripP50"] = percentile(0.5, samples)
        figures["roundTripP99"] = percentile(0.99, samples)
        if side.cancellation is not None:
            log(f"repetition {number}, {side.name}: {config['cancellations']} cancellations")
            samples = [side.cancellation() * 1000 for _ in range(config["cancellations"])]
            figures["cancelP50"] = percentile(0.5, samples)
            figures["cancelP99"] = percentile(0.99, samples)
        worker.check()
    finally:
        worker.stop()
    side.finish()
    return figures


def main():
    with open(sys.argv[1]) as file:
        config = json.load(file)
    sys.path.insert(0, LIB)
    os.environ["PEERS_BROKER_URL"] = config["url"]
    os.environ["PEERS_REDIS_URL"] = config["redis"]
    broker = Broker(config["url"])
    sides = [SIDES[name](config, broker) for name in config["sides"]]
    out = {"versions": {}, "figures": {side.name: [] for side in sides}}
    for side in sides:
        out["versions"].update(side.versions(config))
    for number in range(1, config["repetitions"] + 1):
        # Each repetition runs the sides in another order, so that a drift of the machine does not favour one.
        shift = (number - 1) % len(sides)
        for side in sides[shift:] + sides[:shift]:
            out["figures"][side.name].append(repetition(side, config, number))
    with open(sys.argv[2], "w") as file:
        json.dump(out, file)


if __name__ == "__main__":
    # SIGTERM stops as Ctrl-C does: the worker is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        main()
    except RuntimeError as error:
        log(str(error))
        sys.exit(1)
