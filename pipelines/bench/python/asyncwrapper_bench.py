"""The bench's "python" contender: Beam Python's AsyncWrapper on prism.

Run by pipelines/bench (see --python); the sink appends each output's
creation and commit times to --samples, and the script prints one JSON line
with the wall time, CPU time and peak RSS of its driver.
"""
import argparse
import json
import resource
import threading
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.transforms.async_dofn import AsyncWrapper
from apache_beam.transforms.periodicsequence import PeriodicImpulse

_lock = threading.Lock()


class SlowCall(beam.DoFn):
    """The same call as the Go contenders: sleep for the latency; every
    slow_every-th element (by index) sleeps slow_x times as long."""

    def __init__(self, latency_s, slow_every=0, slow_x=1.0):
        self.latency_s = latency_s
        self.slow_every = slow_every
        self.slow_x = slow_x

    def process(self, element):
        _, value = element
        d = self.latency_s
        if self.slow_every > 0 and int(value.split("/")[1]) % self.slow_every == self.slow_every // 2:
            d *= self.slow_x
        time.sleep(d)
        yield value


class Sink(beam.DoFn):
    """Appends each output's creation and commit times (Unix microseconds) to
    a file: the SDK worker may run in another process than this script."""

    def __init__(self, path):
        self.path = path

    def setup(self):
        self.f = open(self.path, "a", buffering=1)

    def process(self, value):
        created_us = int(value.split("/")[0])
        with _lock:
            self.f.write("%d %d\n" % (created_us, int(time.time() * 1e6)))

    def teardown(self):
        self.f.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--scenario", required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--keys", type=int, required=True)
    p.add_argument("--latency_ms", type=float, required=True)
    p.add_argument("--p", type=int, required=True)
    p.add_argument("--c_s", type=float, required=True)
    p.add_argument("--per_tick", type=int, default=1)
    p.add_argument("--tick_s", type=float, default=0.1)
    p.add_argument("--stream_s", type=float, default=5)
    p.add_argument("--slow_every", type=int, default=0)
    p.add_argument("--slow_x", type=float, default=1.0)
    p.add_argument("--prism", required=True)
    p.add_argument("--samples", required=True, help="file the sink appends creation and commit times to")
    a = p.parse_args()

    args = ["--runner=PrismRunner", "--prism_location=" + a.prism, "--environment_type=LOOPBACK"]
    if a.scenario == "stream":
        args.append("--streaming")
    opts = PipelineOptions(args)
    wrapper = AsyncWrapper(SlowCall(a.latency_ms / 1000, a.slow_every, a.slow_x), parallelism=a.p, callback_frequency=a.c_s)
    cpu0 = time.process_time()
    began = time.time()
    with beam.Pipeline(options=opts) as pipe:
        if a.scenario == "batch":
            keyed = (pipe | beam.Create(list(range(a.n)))
                     | beam.Map(lambda i, keys=a.keys: ("k%d" % (i % keys), "%d/%d" % (int(time.time() * 1e6), i))))
        else:
            start = time.time() + 1
            per_tick, keys, tick = a.per_tick, a.keys, a.tick_s

            def fan_out(ts, start=start):
                t = float(ts)
                first = int(round((t - start) / tick)) * per_tick
                for i in range(first, first + per_tick):
                    yield ("k%d" % (i % keys), "%d/%d" % (int(t * 1e6), i))

            keyed = (pipe | PeriodicImpulse(start_timestamp=start, stop_timestamp=start + a.stream_s, fire_interval=tick)
                     | beam.FlatMap(fan_out))
        _ = keyed | beam.ParDo(wrapper) | beam.ParDo(Sink(a.samples))
    wall = time.time() - began
    # The Go side reads the samples and computes latencies and rates.
    print(json.dumps({
        "wall_s": wall,
        "cpu_s": time.process_time() - cpu0,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()
